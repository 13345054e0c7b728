"""What the shell policy sees of a command: simple commands made of words, and why it refuses.

A :class:`Word` carries the value bash will give it after quote removal -- or ``None``
when the policy cannot prove that value (an expansion or a glob the operator enabled).
The decoders here are written against bash's own quoting rules rather than the parser's
idea of a word: every character bash would treat specially, unescaped, ends the proof.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._config import ShellSyntax

METACHARACTERS = frozenset(" \t\n|&;()<>")
"""Characters that end a word in bash when unquoted."""
QUOTING = frozenset("\\'\"`$")
GLOB = frozenset("*?[")


class ShellPolicyViolation(ValueError):
    """A command the shell policy refuses; names the offending part and the reason."""

    def __init__(self, part: str, reason: str) -> None:
        super().__init__(f"refused {part!r}: {reason}")
        self.part = part
        """The offending piece of the command, as written."""
        self.reason = reason
        """Why it is refused."""


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command."""

    text: str
    """As written in the command."""
    value: str | None
    """After quote removal; ``None`` when an expansion makes it unknowable."""
    shape: str | None = None
    """For a word whose only expansion is a glob: its text after quote removal, the glob
    characters kept (a quoted ``*`` reads as a glob here too, which only ever refuses more)."""
    dashless: bool = False
    """Its value is unknown, but every word bash makes of it starts with a character other
    than ``-``: no word splitting, and a first character known not to be ``-``. Such a word
    can never be read as an option."""
    test_operand: bool = False
    """Its value is unknown, but no word bash makes of it is ``-v`` or ``-R``, the operators
    through which ``test`` evaluates an array subscript (true of every dashless word)."""


@dataclass(frozen=True, slots=True)
class Assignment:
    """``NAME=value`` before a command, on its own, or after ``export``."""

    name: str
    value: Word | None
    """``None`` for a bare ``export NAME``."""
    text: str


@dataclass(frozen=True, slots=True)
class Redirect:
    """One redirection."""

    text: str
    operator: str
    """``>``, ``>>``, ``<``, ``&>``, ``>&``, ``<<<``, ``<<`` ..."""
    fd: int | None
    """The explicit file descriptor on the left, if any."""
    target: Word | None
    """The file, or the descriptor duplicated (``None`` for ``>&-``, a here-document)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """A command with its arguments, as one process (or builtin) sees it."""

    text: str
    argv: tuple[Word, ...]
    assignments: tuple[Assignment, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    piped: bool = False
    """Its standard input is a pipe from an earlier command of a pipeline."""
    declaration: str | None = None
    """``export`` for an export statement (its words are assignments, not arguments)."""
    args_from_stdin: bool = False
    """More arguments arrive at run time (under ``xargs``): unknown ones."""


def decode_unquoted(text: str, syntax: ShellSyntax, home: str | None = None) -> str | None:
    """The value of an unquoted word, ``None`` if an enabled expansion makes it unknown.

    ``home``: the word starts a command's word, where a leading ``~`` or ``~/`` is that
    fixed home (``None``: a leading ``~`` is judged like any other).

    Raises :class:`ShellPolicyViolation` for any character bash would treat specially
    unless the operator enabled that expansion.
    """
    out: list[str] = []
    unknown = False
    i = 0
    if home is not None and home_tilde(text):
        out.append(home)
        i = 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text):
                raise ShellPolicyViolation(text, "a trailing backslash")
            if text[i + 1] != "\n":  # backslash-newline is a line continuation: removed
                out.append(_printable(text[i + 1], text))
            i += 2
            continue
        if c in GLOB:
            if not syntax.globs:
                raise ShellPolicyViolation(
                    text, f"unquoted {c!r} is a glob (globs are not enabled)"
                )
            unknown = True
        elif c == "~" and (i == 0 or text[i - 1] in "=:"):
            if not syntax.tilde:
                raise ShellPolicyViolation(text, "unquoted '~' expands (tilde is not enabled)")
            unknown = True
        elif c in "{}":
            if not syntax.braces:
                raise ShellPolicyViolation(
                    text, f"unquoted {c!r} may expand (brace expansion is not enabled)"
                )
            unknown = True
        elif c in METACHARACTERS or c in QUOTING:
            raise ShellPolicyViolation(text, f"unexpected {c!r} inside a word")
        elif c == "#" and i == 0:
            raise ShellPolicyViolation(text, "a word starting with '#'")
        out.append(_printable(c, text))
        i += 1
    return None if unknown else "".join(out)


def home_tilde(text: str) -> bool:
    """Whether an unquoted word starts with ``~`` alone or ``~/``: bash's ``$HOME``."""
    return text[:1] == "~" and text[1:2] in ("", "/")


def unquoted_shape(text: str, home: str | None = None) -> str | None:
    """The text of an unquoted word already passed by :func:`decode_unquoted`, backslashes
    removed and glob characters kept; ``None`` if tilde or brace expansion applies too
    (but for a leading ``~`` that is ``home``, as there)."""
    out: list[str] = []
    i = 0
    if home is not None and home_tilde(text):
        out.append(home)
        i = 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            if text[i + 1 : i + 2] != "\n":
                out.append(text[i + 1 : i + 2])
            i += 2
            continue
        if c in "{}" or (c == "~" and (i == 0 or text[i - 1] in "=:")):
            return None
        out.append(c)
        i += 1
    return "".join(out)


def starts_dashless(shape: str) -> bool:
    """Whether every match of a glob of this shape starts with a known character, not ``-``."""
    return bool(shape) and shape[0] not in "-" and shape[0] not in GLOB


def never_a_subscript_test(shape: str) -> bool:
    """Whether no match of a glob of this shape can be ``-v`` or ``-R``."""
    if "[" in shape:  # bash's bracket expressions differ from fnmatch's: judge by the start
        return starts_dashless(shape)
    return not any(fnmatch.fnmatchcase(operator, shape) for operator in ("-v", "-R"))


def decode_double_quoted(text: str) -> str | None:
    """The value of ``"..."``; ``None`` if it holds an unescaped ``$`` or backtick."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise ShellPolicyViolation(text, "a malformed double-quoted string")
    inner = text[1:-1]
    out: list[str] = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == "\\" and i + 1 < len(inner) and inner[i + 1] in '$`"\\\n':
            if inner[i + 1] != "\n":
                out.append(inner[i + 1])
            i += 2
            continue
        if c in "$`":
            return None
        if c == '"':
            raise ShellPolicyViolation(text, "an unescaped quote inside a string")
        out.append(c if c in "\n\t" else _printable(c, text))
        i += 1
    return "".join(out)


def decode_single_quoted(text: str) -> str:
    """The value of ``'...'``: everything between the quotes, literally."""
    if len(text) < 2 or text[0] != "'" or text[-1] != "'" or "'" in text[1:-1]:
        raise ShellPolicyViolation(text, "a malformed single-quoted string")
    inner = text[1:-1]
    for c in inner:
        if c not in "\n\t":
            _printable(c, text)
    return inner


def _printable(c: str, text: str) -> str:
    if ord(c) < 0x20 or ord(c) == 0x7F or 0x80 <= ord(c) < 0xA0:
        raise ShellPolicyViolation(text, f"control character {c!r}")
    return c
