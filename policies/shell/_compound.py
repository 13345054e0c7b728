"""Compound commands: loops, conditionals, ``case`` and the test commands ``[`` and ``[[``.

Each construct is taken apart into the statements and words bash will run and expand,
and those go through the same checks as any command: a loop adds no power beyond
running its body again, a condition none beyond running its commands.

A loop's variable is the one expansion allowed without the ``expansions`` switch,
inside its own body: a ``for`` loop's holds one of the loop's words, and the names of a
``while read NAME...`` loop hold what ``read`` read. Either is unknown: it never names a
program, and programs with argument rules refuse it unless their rule proves it
harmless. A quoted ``"$f"`` of a ``for`` loop is *dashless* -- never read as an option --
when every word of the list is, and nothing in the body can give the variable another
value (an assignment to it, an inner loop over it, or a builtin such as ``eval``).

``[ ... ]`` becomes the simple command ``[`` with its words, checked by the ``test``
rule. ``[[ ... ]]`` is syntax: bash neither splits nor globs its words, but evaluates the
operands of ``-eq``, ``-lt``, ... as arithmetic and the name after ``-v``/``-R`` as a
possibly subscripted variable (both can run command substitutions held in a variable's
value), so those operands must be number literals and ``-v``/``-R`` are refused.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from ._config import ShellSyntax
from ._env import protected_env_reason
from ._words import Redirect, ShellPolicyViolation, SimpleCommand, Word, decode_unquoted

if TYPE_CHECKING:
    from tree_sitter import Node

_FLOW_KEYWORDS = frozenset(
    {"for", "in", "while", "until", "do", "done", "if", "then", "elif", "else", "fi", "case",
     "esac", ";", ";;", ";&", ";;&", "|", ")", "("}
)  # fmt: skip
_TAINTING_NAMES = frozenset(
    {"eval", "builtin", "command", "time", "exec", "source", ".", "export", "declare",
     "typeset", "local", "readonly", "read", "mapfile", "readarray", "getopts", "printf",
     "let", "unset", "set"}
)  # fmt: skip
"""Builtins through which a body could give its loop variable another value."""
_EXPRESSIONS = frozenset(
    {"unary_expression", "binary_expression", "parenthesized_expression", "negated_expression"}
)
_SINGLE_TOKENS = frozenset({"!", "=", "==", "!="})
"""Operators ``[`` may hold as words; ``&&``, ``||``, ``<``, ``>`` and parentheses
there are shell syntax to bash (a list, a redirection), never ``[``'s operands."""
_DOUBLE_TOKENS = frozenset({"!", "=", "==", "!=", "<", ">", "&&", "||", "(", ")"})
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_VARIABLE_TESTS = frozenset({"-v", "-R"})
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_PATTERN = re.compile(r"[A-Za-z0-9_./*?\[\]!^,:%+=~@-]+", re.ASCII)
"""An unquoted ``case`` or ``[[ == ]]`` pattern the parser left whole: glob characters
and plain ones, no expansion, no extglob group."""


class LoopVariable(NamedTuple):
    """What is proven of a loop variable's value, quoted (``"$f"``)."""

    dashless: bool
    """It never starts with ``-`` (nor is empty): never an option."""
    test_operand: bool
    """It is never ``-v`` or ``-R``."""


NOT_PROVEN = LoopVariable(dashless=False, test_operand=False)


class CompoundStatements:
    """The part of the parse walker that reads compound commands (mixed into it)."""

    syntax: ShellSyntax
    commands: list[SimpleCommand]
    loop_vars: dict[str, LoopVariable]
    """Loop variables in scope -> what is proven of ``"$NAME"``."""

    if TYPE_CHECKING:  # provided by the walker and its other part

        def text(self, node: Node) -> str: ...

        def refuse(self, node: Node, reason: str) -> ShellPolicyViolation: ...

        def gaps(self, node: Node, *, newlines: bool) -> None: ...

        def statement(self, node: Node, *, piped: bool, depth: int) -> None: ...

        def word(self, node: Node) -> Word: ...

        def command(self, node: Node, *, piped: bool, extra: tuple[Redirect, ...]) -> None: ...

    # -- control flow ----------------------------------------------------------------------

    def compound(self, node: Node, *, piped: bool, depth: int) -> None:
        """A loop, ``if``, ``case`` or ``!``: its keywords, words and statements."""
        if not self.syntax.control_flow:
            raise self.refuse(node, f"{node.type.replace('_', ' ')}s are not enabled")
        self.gaps(node, newlines=True)
        if node.type == "negated_command":
            body = [child for child in node.children if child.is_named]
            if [child.type for child in node.children if not child.is_named] != ["!"]:
                raise self.refuse(node, "an unusual negation")
            for child in body:
                self.statement(child, piped=piped, depth=depth + 1)
            return
        if node.type == "for_statement":
            self.for_loop(node, piped=piped, depth=depth)
            return
        names = self.read_loop(node, piped=piped) if node.type == "while_statement" else ()
        outer = {name: self.loop_vars[name] for name in names if name in self.loop_vars}
        for child in node.children:
            field = _field(child)
            if names and field == "condition" and child.is_named:
                continue  # the read, checked by read_loop
            if field == "body":
                self.loop_vars.update(dict.fromkeys(names, NOT_PROVEN))
            self.flow_part(child, piped=piped, depth=depth)
        for name in names:
            del self.loop_vars[name]
        self.loop_vars.update(outer)

    def read_loop(self, node: Node, *, piped: bool) -> tuple[str, ...]:
        """The names of ``while read [-r] NAME...; do``, checked; ``()`` for another loop.

        ``read`` is refused anywhere else (it could assign any variable); here its names
        are plain, unprotected variable names, and its condition is checked otherwise
        like a command: its redirections, and no other assignment than ``IFS``.
        """
        conditions = [c for c in node.children if c.is_named and _field(c) == "condition"]
        if len(conditions) != 1 or conditions[0].type != "command":
            return ()
        condition = conditions[0]
        name = next((c for c in condition.children if c.type == "command_name"), None)
        if name is None or self.text(name) != "read":
            return ()
        before = len(self.commands)
        self.command(condition, piped=piped, extra=())
        read = self.commands.pop(before)
        names = tuple(dict.fromkeys(_read_names(read)))
        for assignment in read.assignments:
            if assignment.name != "IFS" or assignment.value is None:
                raise ShellPolicyViolation(assignment.text, "read takes no assignment but IFS=")
            if assignment.value.value is None:
                raise ShellPolicyViolation(assignment.text, "IFS must be literal")
        self.commands.insert(before, SimpleCommand(read.text, (), (), read.redirects, piped))
        return names

    def flow_part(self, child: Node, *, piped: bool, depth: int) -> None:
        """One child of a compound command: a keyword, a clause, a word or a statement."""
        parent = child.parent
        if not child.is_named:
            if child.type not in _FLOW_KEYWORDS:
                raise self.refuse(child, "unexpected token")
        elif child.type in ("do_group", "elif_clause", "else_clause"):
            self.gaps(child, newlines=True)
            for part in child.children:
                self.flow_part(part, piped=piped, depth=depth + 1)
        elif child.type == "case_item":
            self.case_item(child, piped=piped, depth=depth)
        elif parent is not None and parent.type == "case_statement" and _field(child) == "value":
            self.word(child)
        else:
            self.statement(child, piped=piped, depth=depth + 1)

    def for_loop(self, node: Node, *, piped: bool, depth: int) -> None:
        variable: str | None = None
        words: list[Word] = []
        body: Node | None = None
        for child in node.children:
            field = _field(child)
            if field == "variable":
                variable = self.text(child)
            elif field == "value":
                words.append(self.word(child))
            elif field == "body":
                body = child
            elif child.type == "comment":
                self.statement(child, piped=piped, depth=depth + 1)
            elif child.is_named:
                raise self.refuse(child, "an unusual for loop")
            elif not child.is_named and child.type not in ("for", "in", ";"):
                raise self.refuse(child, "an unusual for loop (only 'for NAME in WORDS')")
        if variable is None or body is None or body.type != "do_group":
            raise self.refuse(node, "an unusual for loop (only 'for NAME in WORDS; do ...')")
        if not self.syntax.assignments:
            raise self.refuse(node, "variable assignments are not enabled (a loop assigns)")
        reason = protected_env_reason(variable)
        if reason is not None:
            raise ShellPolicyViolation(variable, reason)
        outer = self.loop_vars.get(variable)
        if outer is not None or _retargeted(body, variable):
            self.loop_vars[variable] = NOT_PROVEN
        else:
            self.loop_vars[variable] = LoopVariable(
                all(_never_an_option(word) for word in words),
                all(_never_a_subscript_test(word) for word in words),
            )
        try:
            self.flow_part(body, piped=piped, depth=depth)
        finally:
            if outer is None:
                del self.loop_vars[variable]
            else:
                self.loop_vars[variable] = outer

    def case_item(self, node: Node, *, piped: bool, depth: int) -> None:
        self.gaps(node, newlines=True)
        for child in node.children:
            if _field(child) == "value":
                self.pattern(child)
            else:
                self.flow_part(child, piped=piped, depth=depth + 1)

    def pattern(self, node: Node) -> None:
        """A pattern bash matches a string against: globs touch no file there."""
        if node.type == "extglob_pattern":
            if not _PATTERN.fullmatch(self.text(node)):
                raise self.refuse(node, "only plain glob patterns (no extglob groups)")
        elif node.type == "word" and not node.child_count:
            decode_unquoted(self.text(node), _PATTERN_SYNTAX)
        elif node.type == "concatenation":
            for child in node.children:
                self.pattern(child)
        else:
            self.word(node)

    # -- [ and [[ --------------------------------------------------------------------------

    def test_command(self, node: Node, *, piped: bool) -> None:
        if not self.syntax.test_commands:
            raise self.refuse(node, "test commands ([ ... ], [[ ... ]]) are not enabled")
        self.gaps(node, newlines=False)
        opening = node.children[0].type if node.child_count else ""
        if opening == "[":
            self.single_bracket(node, piped=piped)
        elif opening == "[[":
            self.double_bracket(node)
        else:
            raise self.refuse(node, "an unusual test command")

    def test_leaves(self, node: Node, out: list[tuple[Node, Word | None]]) -> None:
        """The operands (with their words) and operators of a test, in order."""
        stack = list(reversed(node.children))  # not recursion: `!` may nest thousands deep
        while stack:
            child = stack.pop()
            if child.type in _EXPRESSIONS:
                self.gaps(child, newlines=False)
                stack.extend(reversed(child.children))
            elif child.type == "test_operator":
                text = self.text(child)
                value = decode_unquoted(text, self.syntax)
                out.append((child, Word(text, value)))
            elif not child.is_named:
                out.append((child, None))
            elif child.type in ("extglob_pattern", "regex"):
                out.append((child, Word(self.text(child), None)))
            else:
                out.append((child, self.word(child)))

    def single_bracket(self, node: Node, *, piped: bool) -> None:
        leaves: list[tuple[Node, Word | None]] = []
        self.test_leaves(node, leaves)
        argv: list[Word] = []
        for leaf, word in leaves:
            if word is None:
                if leaf.type in ("[", "]") or leaf.type in _SINGLE_TOKENS:
                    argv.append(Word(leaf.type, leaf.type))
                    continue
                raise self.refuse(leaf, f"{leaf.type!r} inside [ ] is shell syntax, not a test")
            if leaf.type in ("extglob_pattern", "regex"):
                raise self.refuse(leaf, "an unusual operand of [ ]")
            argv.append(word)
        self.commands.append(SimpleCommand(self.text(node), tuple(argv), piped=piped))

    def double_bracket(self, node: Node) -> None:
        leaves: list[tuple[Node, Word | None]] = []
        self.test_leaves(node, leaves)
        self.commands.append(SimpleCommand(self.text(node), ()))  # syntax: runs no program
        for index, (leaf, word) in enumerate(leaves):
            if word is None:
                if leaf.type not in ("[[", "]]") and leaf.type not in _DOUBLE_TOKENS:
                    raise self.refuse(leaf, f"{leaf.type!r} is not supported in [[ ]]")
                continue
            if leaf.type == "regex":
                raise self.refuse(leaf, "=~ is not supported in [[ ]]")
            if leaf.type == "extglob_pattern" and not _PATTERN.fullmatch(word.text):
                raise self.refuse(leaf, "only plain glob patterns in [[ ]]")
            if word.value in _VARIABLE_TESTS:
                raise self.refuse(leaf, f"{word.value} evaluates a variable's subscript")
            if word.value in _ARITHMETIC_TESTS:
                after = leaves[index + 1][1] if index + 1 < len(leaves) else None
                for side in (leaves[index - 1][1], after):
                    if side is None or side.value is None or not _INTEGER.fullmatch(side.value):
                        raise self.refuse(
                            node,
                            f"{word.value} in [[ ]] evaluates its operands as arithmetic; "
                            "only number literals are allowed",
                        )


_READ_FLAGS = frozenset({"-r", "-s", "-rs", "-sr"})
_READ_VALUES = frozenset({"-d", "-n", "-N", "-t"})


def _read_names(read: SimpleCommand) -> tuple[str, ...]:
    """The variables ``read`` assigns, its options checked."""
    words = [word.value for word in read.argv[1:]]
    names: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word is None:
            raise ShellPolicyViolation(read.argv[i + 1].text, "read's words must be literal")
        if names or not word.startswith("-"):
            reason = protected_env_reason(word)
            if reason is not None:
                raise ShellPolicyViolation(word, f"read: {reason}")
            names.append(word)
        elif word in _READ_VALUES and i + 1 < len(words):
            i += 1
        elif word not in _READ_FLAGS:
            raise ShellPolicyViolation(word, "read: only -r, -s, -d, -n, -N and -t")
        i += 1
    return tuple(names) or ("REPLY",)


def _field(node: Node) -> str | None:
    parent = node.parent
    if parent is None:
        return None
    for index, child in enumerate(parent.children):
        if child == node:
            return parent.field_name_for_child(index)
    return None


def _never_an_option(word: Word) -> bool:
    if word.value is not None:
        return bool(word.value) and not word.value.startswith("-")
    return word.dashless


def _never_a_subscript_test(word: Word) -> bool:
    if word.value is not None:
        return word.value not in ("-v", "-R")
    return word.test_operand


def _retargeted(body: Node, variable: str) -> bool:
    """Whether anything in ``body`` may give ``variable`` another value."""
    stack = [body]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in ("variable_assignment", "for_statement"):
            names = [c for c in node.children if c.type == "variable_name"][:1]
            assigns = bool(names) and _raw(names[0]) == variable
        elif kind == "command_name":
            assigns = _QUOTES.sub("", _raw(node)) in _TAINTING_NAMES
        else:
            assigns = kind in ("declaration_command", "unset_command")
        if assigns:
            return True
        stack.extend(node.children)
    return False


_QUOTES = re.compile(r"[\\'\"]")


def _raw(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


_PATTERN_SYNTAX = ShellSyntax(globs=True)
"""How a pattern's words decode: glob characters there match strings, not files."""
