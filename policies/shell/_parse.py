"""From a command string to the simple commands bash will run, via tree-sitter-bash.

The parse decides nothing by pattern: each node of the tree must be of an allowlisted
type, each word must decode to a literal under bash's quoting rules (see
:mod:`._words`), and the bytes between nodes must be blanks -- so nothing the parser
skipped, reinterpreted or could not parse (``ERROR``/``MISSING`` nodes) reaches bash
unseen. Where the parser and bash could disagree (a line continuation glued to a word, a
``#`` in mid-word, a carriage return), the command is refused rather than guessed at.

The walker reads statements, lists and pipelines here; compound commands
(:mod:`._compound`) and the words and redirections of a command (:mod:`._parts`) are
read by the two parts mixed into it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from ._compound import CompoundStatements, LoopVariable
from ._parts import REDIRECTS, CommandParts
from ._words import Assignment, Redirect, ShellPolicyViolation, SimpleCommand, Word

if TYPE_CHECKING:
    from ._config import ShellSyntax

MAX_COMMAND_BYTES = 64 * 1024
MAX_DEPTH = 24
"""Nesting (substitutions, groups, loops, conditionals) deeper than this is refused; a
flat chain of ``&&``, ``||`` and ``;`` is one level however long it is."""
MAX_COMMANDS = 1024
"""Simple commands one command string may hold."""
_COMPOUND = frozenset(
    {"for_statement", "while_statement", "until_statement", "if_statement", "case_statement",
     "negated_command"}
)  # fmt: skip
_LANGUAGE = Language(tree_sitter_bash.language())
_COMMENT_MAY_FOLLOW = frozenset(b" \t\n;&|()")
_BRACKETS = {
    "subshell": ("(", ")"),
    "compound_statement": ("{", "}"),
    "command_substitution": ("$(", ")", "`"),
    "process_substitution": ("<(", ">(", ")"),
}
"""The tokens that open and close each kind of block."""


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


class _Walker(CommandParts, CompoundStatements):
    """Walks the tree: statements here, compound commands and the parts of a command in
    the mixins (each declares what it uses of the others for type checking only)."""

    def __init__(self, source: bytes, syntax: ShellSyntax) -> None:
        self.source = source
        self.syntax = syntax
        self.commands: list[SimpleCommand] = []
        self.loop_vars: dict[str, LoopVariable] = {}
        self.depth = 0
        """The depth of the statement being read (a substitution in it is one deeper)."""

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
        if len(self.commands) > MAX_COMMANDS:
            raise self.refuse(node, f"more than {MAX_COMMANDS} commands")
        outer, self.depth = self.depth, depth
        try:
            self.dispatch(node, piped=piped, depth=depth)
        finally:
            self.depth = outer

    def dispatch(self, node: Node, *, piped: bool, depth: int) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, piped=piped, extra=())
        elif kind == "redirected_statement":
            self.redirected(node, piped=piped, depth=depth)
        elif kind == "pipeline":
            self.gaps(node, newlines=True)
            first = True
            for child in node.children:
                if child.is_named:
                    self.statement(child, piped=piped if first else True, depth=depth + 1)
                    first = False
                elif child.type not in ("|", "|&"):
                    raise self.refuse(child, "unexpected operator")
        elif kind == "list":
            self.chain(node, piped=piped, depth=depth)
        elif kind in _COMPOUND:
            self.compound(node, piped=piped, depth=depth)
        elif kind == "test_command":
            self.test_command(node, piped=piped)
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
        elif kind == "unset_command":
            raise self.refuse(node, "unset commands are not supported")
        else:
            raise self.refuse(node, f"{kind.replace('_', ' ')} is not supported")

    def chain(self, node: Node, *, piped: bool, depth: int) -> None:
        """``a && b || c ...``: the parser nests each operator's left side one level deeper,
        so the chain is walked along that spine, all of it at one depth."""
        spine = [node]
        while True:
            left = next((c for c in spine[-1].children if c.is_named), None)
            if left is None or left.type != "list":
                break
            spine.append(left)
        for position, level in enumerate(reversed(spine)):
            self.gaps(level, newlines=True)
            lower_seen = position == 0  # an upper level's first operand is the level below
            for child in level.children:
                if not child.is_named:
                    if child.type not in ("&&", "||"):
                        raise self.refuse(child, "unexpected operator")
                elif lower_seen:
                    self.statement(child, piped=piped, depth=depth + 1)
                else:
                    lower_seen = True

    def redirected(self, node: Node, *, piped: bool, depth: int) -> None:
        self.gaps(node, newlines=False)
        body: Node | None = None
        redirects: list[Redirect] = []
        followers: list[tuple[str, Node]] = []
        for child in node.children:
            if child.type in REDIRECTS:
                redirects.append(self.redirect(child, redirects, followers))
            elif child.is_named and body is None:
                body = child
            else:
                raise self.refuse(child, "unexpected part of a redirection")
        if body is None:
            # a bare redirection (`> file`) truncates or opens a file and runs nothing
            self.commands.append(SimpleCommand(self.text(node), (), (), tuple(redirects)))
        elif body.type == "command":
            self.command(body, piped=piped, extra=tuple(redirects))
        else:
            stdin = any(r.operator in ("<", "<<", "<<-", "<<<", "<&", "<>") for r in redirects)
            self.statement(body, piped=piped or stdin, depth=depth + 1)
            self.commands.append(SimpleCommand(self.text(node), (), (), tuple(redirects)))
        for operator, follower in followers:
            self.follower(operator, follower, piped=piped, depth=depth)

    def follower(self, operator: str, node: Node, *, piped: bool, depth: int) -> None:
        """What the parser hung on a here-document's first line: ``| next`` or ``&& next``."""
        if operator != "|":
            self.statement(node, piped=piped, depth=depth + 1)
            return
        self.gaps(node, newlines=True)
        for child in node.children:
            if child.is_named:
                self.statement(child, piped=True, depth=depth + 1)
            elif child.type not in ("|", "|&"):
                raise self.refuse(child, "unexpected operator")

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
            elif child.type in REDIRECTS:
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

    # -- what lies between the nodes -------------------------------------------------------

    def gaps(self, node: Node, *, newlines: bool) -> None:
        """The bytes of ``node`` outside its children: blanks and safe continuations only."""
        cursor = node.start_byte
        for child in node.children:
            self.blank(cursor, child.start_byte, newlines=newlines)
            cursor = child.end_byte
        if node.child_count:
            self.blank(cursor, node.end_byte, newlines=newlines)

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
