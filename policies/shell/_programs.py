"""Argument rules for allowlisted programs that can run other code through their options.

This module holds the rules for programs with options of their own to watch (``sort``,
``find``, ``sed``, ``awk``, ``tar``, ``printf``) and the table of every rule; git's and the
runners' live beside it (:mod:`._git`, :mod:`._runners`), the shared helpers in
:mod:`._rules`.
"""

from __future__ import annotations

from ._env import protected_env_reason
from ._git import git_rule
from ._rules import Inner, Rule, Script, Unknown, long_hit, options, refuse
from ._runners import (
    builtin_rule,
    command_rule,
    env_rule,
    eval_rule,
    exec_rule,
    nice_rule,
    nohup_rule,
    shell_rule,
    time_rule,
    timeout_rule,
    xargs_rule,
)
from ._sed import check_sed_script
from ._words import SimpleCommand

__all__ = ["RULES", "TAKES_UNKNOWN", "Inner", "Rule", "Script", "Unknown"]


def _sort(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    for arg in options(args):
        if long_hit(arg, ("compress-program",)):
            raise refuse("sort", arg, "--compress-program runs a program")
    return []


def _find(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    for arg in args:
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            raise refuse("find", arg, f"{arg} runs a program for each file")
        if arg in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            raise refuse("find", arg, f"{arg} writes a file (use a redirection)")
    return []


_SED_LONG = {
    "expression": True, "file": True, "in-place": False, "line-length": True,
    "null-data": False, "zero-terminated": False, "quiet": False, "silent": False,
    "regexp-extended": False, "separate": False, "unbuffered": False, "posix": False,
    "debug": False, "sandbox": False, "follow-symlinks": False, "binary": False,
}  # fmt: skip
"""GNU sed's long options: whether each takes an argument."""


def _sed(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg.startswith("--"):
            typed, eq, value = arg[2:].partition("=")
            matches = [name for name in _SED_LONG if name.startswith(typed)] if typed else []
            if len(matches) != 1:
                raise refuse("sed", arg, "an unknown or ambiguous option")
            name = matches[0]
            if name == "file":
                raise refuse("sed", arg, "a script file is not checked (give the script inline)")
            if name == "expression":
                if not eq:
                    if i >= len(args):
                        raise refuse("sed", arg, "a missing script")
                    value, i = args[i], i + 1
                _literal_script("sed", value)
                scripts.append(value)
            elif name == "line-length" and not eq:
                i += 1
            continue
        if arg.startswith("-") and arg != "-":
            j = 1
            while j < len(arg):
                letter = arg[j]
                j += 1
                if letter in "nrEsuzb":
                    continue
                if letter == "i":
                    break  # the rest is the backup suffix
                if letter in "el":
                    value = arg[j:]
                    if not value:
                        if i >= len(args):
                            raise refuse("sed", arg, f"-{letter} needs a value")
                        value, i = args[i], i + 1
                    if letter == "e":
                        _literal_script("sed", value)
                        scripts.append(value)
                    break
                if letter == "f":
                    raise refuse(
                        "sed", arg, "a script file is not checked (give the script inline)"
                    )
                raise refuse("sed", arg, f"unknown option -{letter}")
            continue
        operands.append(arg)
    if not scripts:
        if not operands:
            raise refuse("sed", cmd.text, "no script")
        _literal_script("sed", operands[0])
        scripts.append(operands[0])
    # sed joins its -e scripts with newlines: each is read alone and as the whole
    for script in (*scripts, "\n".join(scripts)) if len(scripts) > 1 else scripts:
        check_sed_script(script)
    return []


_AWK_TEXT_REFUSALS = (
    ("system", "system() runs a shell command"),
    ("|", "pipes run shell commands"),
    ("@", "gawk directives (@load, @include) load code"),
    ("extension", "extension() loads code"),
)


def _awk(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    programs: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg in ("-F", "-v", "--field-separator", "--assign"):
            i += 1
        elif arg in ("-e", "--source"):
            if i >= len(args):
                raise refuse("awk", arg, "a missing program")
            _literal_script("awk", args[i])
            programs.append(args[i])
            i += 1
        elif arg.startswith("--source="):
            programs.append(arg.partition("=")[2])
        elif arg.startswith(("-F", "-v", "--field-separator=", "--assign=")) or arg in (
            "--posix", "--traditional", "--re-interval", "--sandbox", "-P", "-c", "-r"
        ):  # fmt: skip
            continue
        elif arg.startswith("-") and arg != "-":
            raise refuse("awk", arg, "only -F, -v, -e and plain options are allowed")
        else:
            operands.append(arg)
    if not programs:
        if not operands:
            raise refuse("awk", cmd.text, "no program")
        _literal_script("awk", operands[0])
        programs.append(operands[0])
    for program in programs:
        for needle, reason in _AWK_TEXT_REFUSALS:
            if needle in program:
                raise refuse("awk", program, reason)
    return []


_TAR_LONG = (
    "to-command", "checkpoint-action", "use-compress-program", "info-script",
    "new-volume-script", "rsh-command", "rmt-command", "index-file",
)  # fmt: skip
_TAR_SHORT = frozenset("IF")


def _tar(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    force_local = "--force-local" in args
    values = _tar_values(args)
    for position, arg in enumerate(args):
        if isinstance(arg, Unknown):
            if position == 0 or position in values:
                raise refuse(
                    "tar", arg, "a glob or variable may only name members (not an option's value)"
                )
            continue
        if arg == "--":
            break
        hit = long_hit(arg, _TAR_LONG)
        if hit:
            raise refuse("tar", arg, f"--{hit} runs a program or writes outside the archive")
        bundle = arg[1:] if arg.startswith("-") and not arg.startswith("--") else ""
        if position == 0 and not arg.startswith("-"):
            bundle = arg  # old-style `tar xzf`: the first word is all option letters
        if _TAR_SHORT & set(bundle):
            raise refuse("tar", arg, "-I and -F run programs")
        if ":" in arg and not force_local:
            raise refuse("tar", arg, "an archive name with ':' is fetched with rsh")
    return []


_TAR_VALUES = frozenset("fCTXbgKNVLHIF")
"""Short options of GNU tar that take a value."""


def _tar_values(args: list[str]) -> set[int]:
    """Positions of ``args`` that may be an option's value (a long option without ``=``
    is taken to have one)."""
    values: set[int] = set()
    pending = 0
    for position, arg in enumerate(args):
        if pending:
            values.add(position)
            pending -= 1
        elif arg == "--":
            break
        elif isinstance(arg, Unknown):
            continue
        elif arg.startswith("--"):
            pending = 0 if "=" in arg else 1
        elif arg.startswith("-"):
            letters = arg[1:]
            first = next((j for j, c in enumerate(letters) if c in _TAR_VALUES), None)
            pending = 1 if first == len(letters) - 1 else 0  # else its value is attached
        elif position == 0:  # old-style `tar czf NAME`: each value letter takes a word
            pending = sum(c in _TAR_VALUES for c in arg)
    return values


def _printf(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    if args and args[0].startswith("-v"):
        raise refuse("printf", args[0], "-v assigns a variable")
    return []


def _test(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    name = cmd.argv[0].value or "test"
    for arg in args:
        if arg in ("-v", "-R") and not isinstance(arg, Unknown):
            raise refuse(name, arg, f"{arg} evaluates a variable's subscript (it can run commands)")
    return []


def _export(cmd: SimpleCommand, args: list[str]) -> list[Inner]:
    for arg in args:
        if arg.startswith("-"):
            raise refuse("export", arg, "export takes NAME or NAME=value only (no options)")
        reason = protected_env_reason(arg.split("=", 1)[0])
        if reason is not None:
            raise refuse("export", arg, reason)
    return []


def _literal_script(program: str, script: str) -> None:
    if isinstance(script, Unknown):
        raise refuse(program, script, "its program must be literal (a glob or variable is not)")


RULES: dict[str, Rule] = {
    "sort": _sort, "find": _find, "sed": _sed, "awk": _awk, "gawk": _awk, "mawk": _awk,
    "nawk": _awk, "tar": _tar, "printf": _printf, "test": _test, "[": _test,
    "export": _export, "git": git_rule, "env": env_rule,
    "timeout": timeout_rule, "nice": nice_rule, "nohup": nohup_rule, "time": time_rule,
    "xargs": xargs_rule, "eval": eval_rule, "exec": exec_rule, "command": command_rule,
    "builtin": builtin_rule,
    **{shell: shell_rule for shell in ("sh", "bash", "dash", "ash", "ksh", "mksh", "rbash",
                                       "yash", "zsh", "fish")},
}  # fmt: skip
"""Programs whose arguments are checked; they get only literal arguments, but for the
:data:`TAKES_UNKNOWN` ones."""

TAKES_UNKNOWN = frozenset(
    {"sort", "find", "sed", "awk", "gawk", "mawk", "nawk", "tar", "printf", "test", "[", "git"}
)
"""Rules that read :class:`Unknown` arguments themselves (as operands, never as a program
or an option's value where that matters)."""
