"""Rules for programs that run another program: what they run is checked in turn.

``env``, ``timeout``, ``nice``, ``nohup``, ``time`` and ``xargs`` name a program and its
arguments; shells (``sh -c``) and ``eval`` take code, which is parsed like any command.
Under ``xargs`` the program gets arguments nobody has seen, so only programs without
argument rules may run there.
"""

from __future__ import annotations

from ._env import protected_env_reason
from ._rules import Inner, Script, inner, long_hit, refuse
from ._words import SimpleCommand


def env_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-i", "--ignore-environment", "-0", "--null", "-", "-v", "--debug"):
            i += 1
        elif arg in ("-u", "--unset"):
            _check_env_name("env", args[i + 1] if i + 1 < len(args) else "")
            i += 2
        elif arg.startswith(("-u", "--unset=")):
            _check_env_name("env", arg[2:] if arg.startswith("-u") else arg.split("=", 1)[1])
            i += 1
        elif arg in ("-C", "--chdir"):
            i += 2
        elif arg.startswith(("-C", "--chdir=")):
            i += 1
        elif arg.startswith("-S") or long_hit(arg, ("split-string",)):
            raise refuse("env", arg, "-S splits a string into a command")
        elif arg.startswith("-"):
            raise refuse("env", arg, "an unknown option")
        elif "=" in arg:
            _check_env_name("env", arg.split("=", 1)[0])
            i += 1
        else:
            break
    return [inner(cmd, 1 + i)] if i < len(args) else []


def _check_env_name(program: str, name: str) -> None:
    reason = protected_env_reason(name)
    if reason is not None:
        raise refuse(program, name, reason)


def timeout_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-s", "-k", "--signal", "--kill-after"):
            i += 2
        elif arg.startswith(("-s", "-k", "--signal=", "--kill-after=")) or arg in (
            "--preserve-status", "--foreground", "-v", "--verbose"
        ):  # fmt: skip
            i += 1
        else:
            raise refuse("timeout", arg, "an unknown option")
    if i + 1 >= len(args):
        raise refuse("timeout", cmd.text, "no command to run")
    return [inner(cmd, 1 + i + 1)]  # past the duration


def nice_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-n", "--adjustment"):
            i += 2
        elif arg.startswith(("-n", "--adjustment=")) or arg[1:].lstrip("-").isdigit():
            i += 1
        else:
            raise refuse("nice", arg, "an unknown option")
    return [inner(cmd, 1 + i)] if i < len(args) else []


def nohup_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    start = 1 if args[:1] == ["--"] else 0
    if start < len(args) and args[start].startswith("-"):
        raise refuse("nohup", args[start], "an unknown option")
    if start >= len(args):
        raise refuse("nohup", cmd.text, "no command to run")
    return [inner(cmd, 1 + start)]


def time_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-o", "-f", "--output", "--format"):
            i += 2
        elif arg in (
            "-p",
            "-v",
            "-q",
            "-a",
            "--portability",
            "--verbose",
            "--quiet",
            "--append",
        ) or (arg.startswith(("--output=", "--format="))):
            i += 1
        else:
            raise refuse("time", arg, "an unknown option")
    return [inner(cmd, 1 + i)] if i < len(args) else []


_XARGS_WITH_VALUE = frozenset(
    {"-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter",
     "--max-lines", "--max-args", "--max-procs", "--max-chars", "--replace", "--eof"}
)  # fmt: skip
_XARGS_FLAGS = frozenset(
    {"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit", "-p",
     "--interactive", "--show-limits", "-i", "-e", "-l", "-o", "--open-tty"}
)  # fmt: skip


def xargs_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in _XARGS_WITH_VALUE:
            i += 2
        elif (
            arg in _XARGS_FLAGS
            or (arg[:2] in _XARGS_WITH_VALUE and len(arg) > 2)
            or (arg.startswith("--") and arg.split("=")[0] in _XARGS_WITH_VALUE)
            or arg.startswith(("-i", "-e", "-l"))
        ):
            i += 1
        elif long_hit(arg, ("process-slot-var",)):
            raise refuse("xargs", arg, "--process-slot-var sets a variable")
        else:
            raise refuse("xargs", arg, "an unknown option")
    if i >= len(args):
        return []  # runs echo
    run = inner(cmd, 1 + i)
    return [SimpleCommand(run.text, run.argv, piped=True, args_from_stdin=True)]


_SHELL_FLAGS = frozenset("ceuxvnfaCbhkmtBEHPT")
"""Single-letter shell options that neither read code from elsewhere nor start a login."""


def shell_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    name = cmd.argv[0].value or "sh"
    if name in ("zsh", "fish"):
        raise refuse(name, cmd.text, "a different shell language; its code cannot be checked")
    script: str | None = None
    wants_script = False
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if wants_script:
            script = arg
            break
        if arg in ("--norc", "--noprofile", "--posix", "--restricted", "--"):
            continue
        if arg in ("-o", "+o"):
            i += 1
            continue
        if arg[:1] in ("-", "+") and len(arg) > 1 and set(arg[1:]) <= _SHELL_FLAGS:
            wants_script = "c" in arg[1:]
            continue
        raise refuse(
            name, arg, "only 'SHELL -c COMMAND' is allowed (scripts and stdin are unchecked)"
        )
    if script is None:
        raise refuse(
            name, cmd.text, "only 'SHELL -c COMMAND' is allowed (scripts and stdin are unchecked)"
        )
    return [Script(script, name)]


def eval_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    return [Script(" ".join(args), "eval")] if args else []


def exec_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-a":
            i += 2
        elif args[i] in ("-c", "-l", "-cl", "-lc", "--"):
            i += 1
        else:
            raise refuse("exec", args[i], "an unknown option")
    return [inner(cmd, 1 + i)] if i < len(args) else []


def command_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] in ("-v", "-V"):
            return []  # only says what the name is
        if args[i] not in ("-p", "--"):
            raise refuse("command", args[i], "an unknown option")
        i += 1
    return [inner(cmd, 1 + i)] if i < len(args) else []


def builtin_rule(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    return [inner(cmd, 1)] if args else []
