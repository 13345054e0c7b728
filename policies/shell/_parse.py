"""From a command string to the simple commands bash will run, via tree-sitter-bash.

The parse decides nothing by pattern: each node of the tree must be of an allowlisted
type, each word must decode to a literal under bash's quoting rules (see
:mod:`._words`), and the bytes between nodes must be blanks -- so nothing the parser
skipped, reinterpreted or could not parse (``ERROR``/``MISSING`` nodes) reaches bash
unseen. Where the parser and bash could disagree (a line continuation glued to a word, a
``#`` in mid-word, a carriage return), the command is refused rather than guessed at.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from ._words import (
    Assignment,
    Redirect,
    ShellPolicyViolation,
    SimpleCommand,
    Word,
    decode_double_quoted,
    decode_single_quoted,
    decode_unquoted,
)

if TYPE_CHECKING:
    from ._config import ShellSyntax

MAX_COMMAND_BYTES = 64 * 1024
MAX_DEPTH = 24
"""Nesting (substitutions, groups, pipelines) deeper than this is refused."""

_LANGUAGE = Language(tree_sitter_bash.language())
_COMMENT_MAY_FOLLOW = frozenset(b" \t\n;&|()")
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_BRACKETS = {
    "subshell": ("(", ")"),
    "compound_statement": ("{", "}"),
    "command_substitution": ("$(", ")", "`"),
    "process_substitution": ("<(", ">(", ")"),
}
"""The tokens that open and close each kind of block."""
_ARITHMETIC = frozenset(
    {
        "binary_expression", "unary_expression", "parenthesized_expression",
        "ternary_expression", "postfix_expression",
    }
)  # fmt: skip
"""Operator nodes inside ``$(( ))``; their leaves must be number literals."""
_NUMBER = re.compile(r"[0-9][0-9A-Za-z@_#]*", re.ASCII)
"""An integer constant as bash's arithmetic reads it (``42``, ``0x1f``, ``2#101``, ``64#zZ``):
a token that starts with a digit is a number to bash, never a variable (tree-sitter calls
``0x1f`` a variable name, hence the check on the text rather than the node type)."""


def parse_command(command: str, syntax: ShellSyntax) -> list[SimpleCommand]:
    """Every simple command in ``command`` (nested ones included), or a violation."""
    if "\x00" in command:
        raise ShellPolicyViolation("\\0", "a NUL byte")
    try:
        source = command.encode("utf-8")
    except UnicodeEncodeError:
        raise ShellPolicyViolation(command[:40], "not valid UTF-8") from None
    if len(source) > MAX_COMMAND_BYTES:
        raise ShellPolicyViolation(command[:40] + "...", f"longer than {MAX_COMMAND_BYTES} bytes")
    tree = Parser(_LANGUAGE).parse(source)
    walker = _Walker(source, syntax)
    if tree.root_node.has_error:
        raise walker.unparsable(tree.root_node)
    walker.block(tree.root_node, piped=False, depth=0)
    if not walker.commands:
        raise ShellPolicyViolation(command, "no command to run")
    return walker.commands


class _Walker:
    def __init__(self, source: bytes, syntax: ShellSyntax) -> None:
        self.source = source
        self.syntax = syntax
        self.commands: list[SimpleCommand] = []

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8")

    def refuse(self, node: Node, reason: str) -> ShellPolicyViolation:
        return ShellPolicyViolation(self.text(node), reason)

    def unparsable(self, root: Node) -> ShellPolicyViolation:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_missing:
                return ShellPolicyViolation(
                    self.source[max(0, node.start_byte - 20) : node.end_byte + 20].decode(),
                    f"incomplete command (missing {node.type!r})",
                )
            if node.type == "ERROR":
                return ShellPolicyViolation(self.text(node) or "(end)", "cannot be parsed")
            stack.extend(reversed(node.children))
        return ShellPolicyViolation(self.text(root), "cannot be parsed")

    # -- structure -----------------------------------------------------------------------

    def block(self, node: Node, *, piped: bool, depth: int) -> None:
        """A program, group or substitution body: statements separated by ``;``, newlines."""
        self.gaps(node, newlines=True)
        brackets = _BRACKETS.get(node.type, ())
        for child in node.children:
            if child.is_named:
                self.statement(child, piped=piped, depth=depth + 1)
            elif child.type == "&":
                if not self.syntax.background:
                    raise self.refuse(child, "running in the background with '&' is not enabled")
            elif child.type != ";" and child.type not in brackets:
                raise self.refuse(child, "unexpected token")

    def statement(self, node: Node, *, piped: bool, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.refuse(node, "nested too deeply")
        kind = node.type
        if kind == "command":
            self.command(node, piped=piped, extra=())
        elif kind == "redirected_statement":
            self.redirected(node, piped=piped, depth=depth)
        elif kind in ("pipeline", "list"):
            self.gaps(node, newlines=True)
            first = True
            for child in node.children:
                if child.is_named:
                    stdin_piped = piped if (first or kind == "list") else True
                    self.statement(child, piped=stdin_piped, depth=depth + 1)
                    first = False
                elif child.type not in ("|", "|&", "&&", "||"):
                    raise self.refuse(child, "unexpected operator")
        elif kind in ("variable_assignment", "variable_assignments"):
            self.gaps(node, newlines=False)
            items = [node] if kind == "variable_assignment" else list(node.named_children)
            assignments = tuple(self.assignment(item) for item in items)
            self.commands.append(SimpleCommand(self.text(node), (), assignments))
        elif kind == "declaration_command":
            self.declaration(node)
        elif kind in ("subshell", "compound_statement"):
            if not self.syntax.subshells:
                raise self.refuse(node, "grouping with ( ) or { } is not enabled")
            self.block(node, piped=piped, depth=depth)
        elif kind == "comment":
            self.comment(node)
        elif kind == "negated_command":
            raise self.refuse(node, "'!' negation is not supported")
        elif kind in ("test_command", "unset_command"):
            raise self.refuse(node, f"{kind.replace('_', ' ')}s are not supported")
        else:
            raise self.refuse(node, f"{kind.replace('_', ' ')} is not supported")

    def redirected(self, node: Node, *, piped: bool, depth: int) -> None:
        self.gaps(node, newlines=False)
        body, redirects = None, []
        for child in node.children:
            if child.type in _REDIRECTS:
                redirects.append(self.redirect(child))
            elif child.is_named and body is None:
                body = child
            else:
                raise self.refuse(child, "unexpected part of a redirection")
        if body is None:
            # a bare redirection (`> file`) truncates or opens a file and runs nothing
            self.commands.append(SimpleCommand(self.text(node), (), (), tuple(redirects)))
            return
        if body.type == "command":
            self.command(body, piped=piped, extra=tuple(redirects))
            return
        stdin = any(r.operator in ("<", "<<", "<<-", "<<<", "<&", "<>") for r in redirects)
        self.statement(body, piped=piped or stdin, depth=depth + 1)
        self.commands.append(SimpleCommand(self.text(node), (), (), tuple(redirects)))

    def command(self, node: Node, *, piped: bool, extra: tuple[Redirect, ...]) -> None:
        self.gaps(node, newlines=False)
        position = len(self.commands)  # before any command substituted into its words
        assignments: list[Assignment] = []
        argv: list[Word] = []
        redirects: list[Redirect] = []
        for child in node.children:
            if child.type == "variable_assignment" and not argv:
                assignments.append(self.assignment(child))
            elif child.type == "command_name":
                self.gaps(child, newlines=False)
                if child.child_count != 1 or argv:
                    raise self.refuse(child, "an unusual command name")
                argv.append(self.word(child.children[0]))
            elif child.type in _REDIRECTS:
                redirects.append(self.redirect(child))
            elif child.is_named and argv:
                argv.append(self.word(child))
            else:
                raise self.refuse(child, "unexpected part of a command")
        self.commands.insert(
            position,
            SimpleCommand(
                self.text(node), tuple(argv), tuple(assignments), (*redirects, *extra), piped
            ),
        )

    def declaration(self, node: Node) -> None:
        self.gaps(node, newlines=False)
        keyword = node.children[0]
        if keyword.is_named or keyword.type != "export":
            raise self.refuse(
                node, f"{keyword.type!r} sets variable attributes (only 'export' is supported)"
            )
        assignments: list[Assignment] = []
        for child in node.children[1:]:
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child))
            elif child.type == "variable_name":
                assignments.append(Assignment(self.text(child), None, self.text(child)))
            else:
                raise self.refuse(child, "export takes NAME or NAME=value only (no options)")
        words = (Word("export", "export"),)
        self.commands.append(
            SimpleCommand(self.text(node), words, tuple(assignments), declaration="export")
        )

    def comment(self, node: Node) -> None:
        before = self.source[node.start_byte - 1] if node.start_byte else ord("\n")
        if before not in _COMMENT_MAY_FOLLOW or "\n" in self.text(node):
            raise self.refuse(node, "a '#' that bash may not read as a comment")

    # -- parts -----------------------------------------------------------------------------

    def assignment(self, node: Node) -> Assignment:
        self.gaps(node, newlines=False)
        children = node.children
        if len(children) < 2 or children[0].type != "variable_name":
            raise self.refuse(node, "only NAME=value assignments are supported")
        if children[1].type not in ("=", "+="):
            raise self.refuse(node, "only NAME=value assignments are supported")
        if len(children) > 3:
            raise self.refuse(node, "an unusual assignment")
        value = self.word(children[2]) if len(children) == 3 else Word("", "")
        return Assignment(self.text(children[0]), value, self.text(node))

    def redirect(self, node: Node) -> Redirect:
        self.gaps(node, newlines=node.type == "heredoc_redirect")
        fd: int | None = None
        operator = ""
        target: Word | None = None
        for child in node.children:
            if child.type == "file_descriptor":
                text = self.text(child)
                if not text.isdigit() or not text.isascii():
                    raise self.refuse(child, "named file descriptors are not supported")
                fd = int(text)
            elif not child.is_named and not operator:
                operator = child.type
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            elif child.is_named and target is None:
                target = self.word(child)
            else:
                raise self.refuse(child, "unexpected part of a redirection")
        if node.type != "file_redirect":
            if not self.syntax.heredocs:
                raise self.refuse(node, "here-documents and here-strings are not enabled")
            if node.type == "heredoc_redirect":
                self.heredoc(node)
        if fd is not None and fd > 2:
            raise self.refuse(node, "only file descriptors 0, 1 and 2 may be redirected")
        return Redirect(self.text(node), operator, fd, target)

    def heredoc(self, node: Node) -> None:
        parts = {child.type: child for child in node.children}
        start, end = parts.get("heredoc_start"), parts.get("heredoc_end")
        if start is None or end is None:
            raise self.refuse(node, "an incomplete here-document")
        raw = self.text(start)
        if raw[:1] not in ("'", '"') or raw[-1:] != raw[:1]:
            raise self.refuse(start, "a here-document's delimiter must be quoted (no expansion)")
        delimiter = raw[1:-1]
        if self.text(end) != delimiter:
            raise self.refuse(end, "a here-document that does not end at its delimiter")
        body = self.text(parts["heredoc_body"]) if "heredoc_body" in parts else ""
        strip = any(child.type == "<<-" for child in node.children)
        for line in body.split("\n"):
            if (line.lstrip("\t") if strip else line) == delimiter:
                raise self.refuse(node, "a here-document line equal to its delimiter")

    def word(self, node: Node) -> Word:
        kind = node.type
        text = self.text(node)
        if kind in ("word", "number"):
            if node.child_count:
                raise self.refuse(node, "an unusual word")
            return Word(text, decode_unquoted(text, self.syntax))
        if kind == "raw_string":
            return Word(text, decode_single_quoted(text))
        if kind == "string":
            return self.double_quoted(node)
        if kind == "concatenation":
            self.adjacent(node)
            parts = [self.word(child) for child in node.children]
            values = [part.value for part in parts]
            literal = None if any(v is None for v in values) else "".join(v or "" for v in values)
            return Word(text, literal)
        self.expansion(node)
        return Word(text, None)

    def double_quoted(self, node: Node) -> Word:
        text = self.text(node)
        expanded = False
        for child in node.children:
            if child.type == "string_content" or (not child.is_named and child.type == '"'):
                continue
            if not child.is_named:
                raise self.refuse(child, f"unexpected {child.type!r} in a string")
            self.expansion(child)
            expanded = True
        value = decode_double_quoted(text)
        if value is None and not expanded:
            raise self.refuse(node, "an unescaped '$' or '`' in a string")
        return Word(text, None if expanded else value)

    def expansion(self, node: Node) -> None:
        """An expansion inside a word: allowed only when its switch is on (value unknown)."""
        kind = node.type
        if kind == "simple_expansion":
            if not self.syntax.expansions:
                raise self.refuse(node, "parameter expansion ($NAME) is not enabled")
            names = [
                c
                for c in node.named_children
                if c.type in ("variable_name", "special_variable_name")
            ]
            if len(node.children) != 2 or len(names) != 1:
                raise self.refuse(node, "an unusual expansion")
        elif kind == "expansion":
            if not self.syntax.expansions:
                raise self.refuse(node, "parameter expansion (${NAME}) is not enabled")
            types = [child.type for child in node.children]
            if types != ["${", "variable_name", "}"]:
                raise self.refuse(node, "only the plain ${NAME} form of expansion is supported")
        elif kind in ("command_substitution", "process_substitution"):
            if not self.syntax.substitutions:
                raise self.refuse(node, "command and process substitution are not enabled")
            self.block(node, piped=False, depth=1)
        elif kind == "arithmetic_expansion":
            if not self.syntax.arithmetic:
                raise self.refuse(node, "arithmetic expansion is not enabled")
            self.arithmetic(node)
        elif kind == "brace_expression":
            if not self.syntax.braces:
                raise self.refuse(node, "brace expansion is not enabled")
        elif kind in ("ansi_c_string", "translated_string"):
            raise self.refuse(node, "$'...' and $\"...\" quoting are not supported")
        else:
            raise self.refuse(node, f"{kind.replace('_', ' ')} is not supported here")

    def arithmetic(self, node: Node) -> None:
        """Literal numbers and operators only.

        Bash evaluates a variable's *value* as an expression wherever arithmetic names it
        (``x``, ``$x``, ``${x}``), and an array subscript in that value runs command
        substitutions: ``y='a[$(cmd)]'; echo $((y))`` runs ``cmd``. A value set by an
        earlier command of the session cannot be proven harmless here, so no variable may
        appear in arithmetic at all.
        """
        self.gaps(node, newlines=True)
        for child in node.named_children:
            if child.type in ("number", "variable_name"):
                if not _NUMBER.fullmatch(self.text(child)):
                    raise self.refuse(
                        child,
                        "a variable in arithmetic (bash evaluates its value as an expression, "
                        "which can run commands); only number literals are allowed",
                    )
            elif child.type in ("simple_expansion", "expansion"):
                raise self.refuse(
                    child,
                    "an expansion in arithmetic (bash evaluates the value as an expression, "
                    "which can run commands); only number literals are allowed",
                )
            elif child.type in _ARITHMETIC:
                self.arithmetic(child)
            else:
                raise self.refuse(child, "only number literals and operators in arithmetic")

    # -- what lies between the nodes -------------------------------------------------------

    def gaps(self, node: Node, *, newlines: bool) -> None:
        """The bytes of ``node`` outside its children: blanks and safe continuations only."""
        cursor = node.start_byte
        for child in node.children:
            self.blank(cursor, child.start_byte, newlines=newlines)
            cursor = child.end_byte
        if node.child_count:
            self.blank(cursor, node.end_byte, newlines=newlines)

    def adjacent(self, node: Node) -> None:
        cursor = node.start_byte
        for child in node.children:
            if child.start_byte != cursor or not child.is_named:
                raise self.refuse(node, "an unusual word")
            cursor = child.end_byte
        if cursor != node.end_byte:
            raise self.refuse(node, "an unusual word")

    def blank(self, start: int, end: int, *, newlines: bool) -> None:
        i = start
        while i < end:
            c = self.source[i]
            if c in (0x20, 0x09) or (c == 0x0A and newlines):
                i += 1
            elif (
                c == 0x5C
                and self.source[i + 1 : i + 2] == b"\n"
                and i > 0
                and self.source[i - 1] in (0x20, 0x09)
            ):
                i += 2  # ` \<newline>`: a continuation after a blank cannot glue two words
            else:
                shown = self.source[max(0, i - 10) : i + 10].decode("utf-8", "replace")
                raise ShellPolicyViolation(shown, f"unexpected {chr(c)!r} between words")
