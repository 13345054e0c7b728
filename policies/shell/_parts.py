"""The parts of a command as the parse walker reads them: words, assignments, redirections.

A word's value is what bash gives it after quote removal (:mod:`._words` decodes it), or
unknown when an expansion the operator enabled -- or a loop variable -- makes it so; then
what can still be proven is kept: the shape of a glob, whether it can never be an
option, whether it can never be ``-v``/``-R``. A here-document's text is checked not to
expand, and arithmetic holds number literals only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ._compound import NOT_PROVEN, LoopVariable
from ._env import FIXED_VARIABLES, SANDBOX_HOME
from ._words import (
    Assignment,
    Redirect,
    ShellPolicyViolation,
    Word,
    decode_double_quoted,
    decode_single_quoted,
    decode_unquoted,
    never_a_subscript_test,
    starts_dashless,
    unquoted_shape,
)

if TYPE_CHECKING:
    from tree_sitter import Node

    from ._config import ShellSyntax

REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_UNSPLIT = frozenset({"word", "number", "raw_string", "string", "concatenation"})
"""Word parts bash does not split into more words."""
_HEREDOC_WORD = re.compile(r"[A-Za-z0-9_.-]+", re.ASCII)
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
_PWD = LoopVariable(dashless=True, test_operand=True)
"""``"$PWD"``: an absolute path, never empty, never an option, never ``-v``."""


class CommandParts:
    """The part of the parse walker that reads words and redirections (mixed into it)."""

    syntax: ShellSyntax
    loop_vars: dict[str, LoopVariable]
    depth: int
    source: bytes

    if TYPE_CHECKING:  # provided by the walker

        def text(self, node: Node) -> str: ...

        def refuse(self, node: Node, reason: str) -> ShellPolicyViolation: ...

        def gaps(self, node: Node, *, newlines: bool) -> None: ...

        def block(self, node: Node, *, piped: bool, depth: int) -> None: ...

    def assignment(self, node: Node) -> Assignment:
        self.gaps(node, newlines=False)
        children = node.children
        if len(children) < 2 or children[0].type != "variable_name":
            raise self.refuse(node, "only NAME=value assignments are supported")
        if children[1].type not in ("=", "+="):
            raise self.refuse(node, "only NAME=value assignments are supported")
        if len(children) > 3:
            raise self.refuse(node, "an unusual assignment")
        # a value's `~` is refused as before: bash expands it after `=` and every `:`
        value = self.word(children[2], first=False) if len(children) == 3 else Word("", "")
        return Assignment(self.text(children[0]), value, self.text(node))

    def redirect(
        self,
        node: Node,
        siblings: list[Redirect] | None = None,
        followers: list[tuple[str, Node]] | None = None,
    ) -> Redirect:
        """One redirection. The parser hangs the rest of a here-document's first line on
        it: more redirections of the same command go to ``siblings``, a pipe or list
        that follows to ``followers``; anywhere else they are refused."""
        self.gaps(node, newlines=node.type == "heredoc_redirect")
        fd: int | None = None
        operator = ""
        target: Word | None = None
        pending: str | None = None
        heredoc = node.type == "heredoc_redirect"
        for child in node.children:
            if heredoc and operator and siblings is not None and followers is not None:
                if child.type in REDIRECTS:
                    siblings.append(self.redirect(child, siblings, followers))
                    continue
                if child.type == "pipeline" and pending is None:
                    followers.append(("|", child))
                    continue
                if child.type in ("&&", "||") and pending is None:
                    pending = child.type
                    continue
                if pending is not None and child.is_named:
                    followers.append((pending, child))
                    pending = None
                    continue
            if child.type == "file_descriptor":
                text = self.text(child)
                if not text.isdigit() or not text.isascii():
                    raise self.refuse(child, "named file descriptors are not supported")
                fd = int(text)
            elif not child.is_named and not operator:
                operator = child.type
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end"):
                continue
            elif child.is_named and target is None and not heredoc:
                target = self.word(child)
            else:
                raise self.refuse(child, "unexpected part of a redirection")
        if pending is not None:
            raise self.refuse(node, f"nothing after {pending!r}")
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
        body_node = parts.get("heredoc_body")
        body = self.text(body_node) if body_node is not None else ""
        if raw[:1] in ("'", '"') and raw[-1:] == raw[:1] and len(raw) >= 2:
            delimiter = raw[1:-1]
        elif _HEREDOC_WORD.fullmatch(raw):
            # unquoted: bash expands the text, which is harmless only when nothing in it can
            if any(c in body for c in "$`\\") or (body_node and body_node.named_child_count):
                raise self.refuse(
                    start,
                    "a here-document with an unquoted delimiter expands its text; quote the "
                    "delimiter (<<'EOF') or leave out $, ` and \\",
                )
            delimiter = raw
        else:
            raise self.refuse(start, "a here-document's delimiter must be a plain or quoted word")
        if self.text(end) != delimiter:
            raise self.refuse(end, "a here-document that does not end at its delimiter")
        strip = any(child.type == "<<-" for child in node.children)
        for line in body.split("\n"):
            if (line.lstrip("\t") if strip else line) == delimiter:
                raise self.refuse(node, "a here-document line equal to its delimiter")

    def word(self, node: Node, *, first: bool = True) -> Word:
        """A word; ``first``: it starts a word of the command (not a later part of a
        concatenation, nor an assignment's value), where a leading ``~`` is ``$HOME``."""
        kind = node.type
        text = self.text(node)
        if kind in ("word", "number"):
            if node.child_count:
                raise self.refuse(node, "an unusual word")
            home = SANDBOX_HOME if first and self.syntax.fixed_variables else None
            value = decode_unquoted(text, self.syntax, home)
            if value is not None:
                return Word(text, value)
            shape = unquoted_shape(text, home)
            if shape is None:
                return Word(text, None)
            return Word(text, None, shape, starts_dashless(shape), never_a_subscript_test(shape))
        if kind == "raw_string":
            return Word(text, decode_single_quoted(text))
        if kind == "string":
            return self.double_quoted(node)
        if kind == "concatenation":
            return self.concatenation(node)
        if self.fixed_home(node):
            return Word(text, SANDBOX_HOME)  # no blank or glob in it: bash keeps it whole
        self.expansion(node)
        return Word(text, None)

    def concatenation(self, node: Node) -> Word:
        self.adjacent(node)
        # bash's tilde-prefix runs to the first unquoted slash: `~"/x"` and `~$x` keep their
        # `~`, so only a first part with its own slash (`~/`) starts with the home
        home = self.text(node.children[0]) != "~"
        parts = [
            self.word(child, first=index == 0 and home) for index, child in enumerate(node.children)
        ]
        values = [part.value for part in parts]
        if all(v is not None for v in values):
            return Word(self.text(node), "".join(v or "" for v in values))
        shapes = [part.value if part.value is not None else part.shape for part in parts]
        shape = None if any(s is None for s in shapes) else "".join(s or "" for s in shapes)
        lead = next((part for part in parts if part.value != ""), None)
        unsplit = all(child.type in _UNSPLIT for child in node.children)
        dashless = (
            unsplit
            and lead is not None
            and (lead.dashless if lead.value is None else not lead.value.startswith("-"))
        )
        operand = dashless or (unsplit and shape is not None and never_a_subscript_test(shape))
        return Word(self.text(node), None, shape, dashless, operand)

    def double_quoted(self, node: Node) -> Word:
        text = self.text(node)
        expanded = False
        first = NOT_PROVEN  # what is known of the string's start
        homes: list[Node] = []
        for index, child in enumerate(node.children):
            if child.type == "string_content" or (not child.is_named and child.type == '"'):
                if index == 1 and child.type == "string_content":
                    safe = not self.text(child).startswith("-")
                    first = LoopVariable(safe, safe)
                continue
            if not child.is_named:
                raise self.refuse(child, f"unexpected {child.type!r} in a string")
            if self.fixed_home(child):
                homes.append(child)
                continue
            variable = self.expansion(child)
            if index == 1:
                first = variable
            expanded = True
        if homes and not expanded:  # "$HOME/x": the text with the home written out
            start, cut = node.start_byte, 0
            pieces = []
            for home in homes:
                pieces += [self.source[start + cut : home.start_byte], SANDBOX_HOME.encode()]
                cut = home.end_byte - start
            text = b"".join([*pieces, self.source[start + cut : node.end_byte]]).decode()
        value = decode_double_quoted(text)
        if value is None and not expanded:
            raise self.refuse(node, "an unescaped '$' or '`' in a string")
        if not expanded:
            return Word(self.text(node), value)
        whole = len(node.children) == 3  # "$f": the string is the variable's value
        operand = first.dashless or (whole and first.test_operand)
        return Word(self.text(node), None, dashless=first.dashless, test_operand=operand)

    def fixed_home(self, node: Node) -> bool:
        """Whether ``node`` is ``$HOME`` or ``${HOME}`` and they stand for the fixed home."""
        return self.syntax.fixed_variables and self.fixed_name(node) == "HOME"

    def fixed_name(self, node: Node) -> str | None:
        """The variable of a plain ``$NAME`` or ``${NAME}`` naming one of the sandbox's fixed
        variables, or ``None``."""
        shapes = {
            "simple_expansion": ["$", "variable_name"],
            "expansion": ["${", "variable_name", "}"],
        }
        if [c.type for c in node.children] != shapes.get(node.type):
            return None
        name = node.children[1]
        if name.type != "variable_name" or self.text(name) not in FIXED_VARIABLES:
            return None
        return self.text(name)

    def expansion(self, node: Node) -> LoopVariable:
        """An expansion inside a word: allowed only when its switch is on (value unknown),
        or when it names a loop variable in scope, whose proofs it returns."""
        kind = node.type
        if self.syntax.fixed_variables and self.fixed_name(node) == "PWD":
            return _PWD
        if kind == "simple_expansion":
            names = [
                c
                for c in node.named_children
                if c.type in ("variable_name", "special_variable_name")
            ]
            if len(node.children) != 2 or len(names) != 1:
                raise self.refuse(node, "an unusual expansion")
            name = self.text(names[0])
            if name in self.loop_vars and names[0].type == "variable_name":
                return self.loop_vars[name]
            if not self.syntax.expansions:
                raise self.refuse(node, "parameter expansion ($NAME) is not enabled")
        elif kind == "expansion":
            types = [child.type for child in node.children]
            if types != ["${", "variable_name", "}"]:
                if not self.syntax.expansions:
                    raise self.refuse(node, "parameter expansion (${NAME}) is not enabled")
                raise self.refuse(node, "only the plain ${NAME} form of expansion is supported")
            name = self.text(node.children[1])
            if name in self.loop_vars:
                return self.loop_vars[name]
            if not self.syntax.expansions:
                raise self.refuse(node, "parameter expansion (${NAME}) is not enabled")
        elif kind in ("command_substitution", "process_substitution"):
            if not self.syntax.substitutions:
                raise self.refuse(node, "command and process substitution are not enabled")
            self.block(node, piped=False, depth=self.depth + 1)
        elif kind == "arithmetic_expansion":
            if not self.syntax.arithmetic:
                raise self.refuse(node, "arithmetic expansion is not enabled")
            if not node.children or node.children[0].type != "$((":
                raise self.refuse(node, "only the $((...)) form of arithmetic is supported")
            self.arithmetic(node)
        elif kind == "brace_expression":
            if not self.syntax.braces:
                raise self.refuse(node, "brace expansion is not enabled")
        elif kind in ("ansi_c_string", "translated_string"):
            raise self.refuse(node, "$'...' and $\"...\" quoting are not supported")
        else:
            raise self.refuse(node, f"{kind.replace('_', ' ')} is not supported here")
        return NOT_PROVEN

    def arithmetic(self, node: Node) -> None:
        """Literal numbers and operators only.

        Bash evaluates a variable's *value* as an expression wherever arithmetic names it
        (``x``, ``$x``, ``${x}``), and an array subscript in that value runs command
        substitutions: ``y='a[$(cmd)]'; echo $((y))`` runs ``cmd``. A value set by an
        earlier command of the session cannot be proven harmless here, so no variable may
        appear in arithmetic at all.
        """
        stack = [node]  # a stack, not recursion: parentheses may nest thousands deep
        while stack:
            self.arithmetic_operands(stack.pop(), stack)

    def arithmetic_operands(self, node: Node, stack: list[Node]) -> None:
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
                stack.append(child)
            else:
                raise self.refuse(child, "only number literals and operators in arithmetic")

    def adjacent(self, node: Node) -> None:
        cursor = node.start_byte
        for child in node.children:
            if child.start_byte != cursor or not child.is_named:
                raise self.refuse(node, "an unusual word")
            cursor = child.end_byte
        if cursor != node.end_byte:
            raise self.refuse(node, "an unusual word")
