"""What the per-program rules share: their result type and option-reading helpers.

A rule sees a simple command whose arguments are all literal -- or, for the rules that
say they handle them, :class:`Unknown` where a word cannot be known but can never be an
option -- and either refuses it
(naming the option) or returns what the command will run in turn -- another simple
command (``timeout 5 git status``) or a script to parse (``bash -c '...'``) -- which the
policy checks like any other. Long options are matched the way getopt matches them, by
any unambiguous prefix, so ``--to-com=...`` is caught as ``--to-command``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ._words import ShellPolicyViolation, SimpleCommand


class Unknown(str):
    """An argument whose value is unknown but never an option: a glob such as
    ``src/*.py`` or a quoted loop variable (bash may make several words of a glob, each
    starting with the same known character). Its text as written stands in for it."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Script:
    """Shell code a program will run (``sh -c``, ``eval``): parsed and checked in turn."""

    text: str
    via: str


Inner = SimpleCommand | Script
Rule = Callable[[SimpleCommand, list[str]], list[Inner]]


def refuse(name: str, part: str, reason: str) -> ShellPolicyViolation:
    return ShellPolicyViolation(part, f"{name}: {reason}")


def long_hit(arg: str, names: Iterable[str]) -> str | None:
    """The dangerous long option ``arg`` abbreviates or names, if any."""
    if not arg.startswith("--") or arg == "--":
        return None
    typed = arg[2:].split("=", 1)[0]
    return next((name for name in names if name.startswith(typed)), None) if typed else None


def inner(cmd: SimpleCommand, start: int) -> SimpleCommand:
    argv = cmd.argv[start:]
    text = " ".join(word.text for word in argv)
    return SimpleCommand(text, argv, piped=cmd.piped, args_from_stdin=cmd.args_from_stdin)


def options(args: list[str]) -> list[str]:
    """Arguments before ``--`` (after it, everything is an operand)."""
    return args[: args.index("--")] if "--" in args else args
