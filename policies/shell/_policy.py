"""The shell policy: may this command string run?

>>> policy = ShellPolicy.from_config(ShellConfig())
>>> policy.check("git status && ls -la | wc -l").programs
('git', 'ls', 'wc')
>>> policy.check("git -c core.pager=./x log")
Traceback (most recent call last):
...
toolcage.policies.ShellPolicyViolation: refused '-c': git: this global option ...

A command passes when, on a real parse (:mod:`._parse`), every simple command in it
-- in every list, pipeline, substitution and ``sh -c`` string, and every program a runner
such as ``timeout`` or ``xargs`` would start -- names an allowlisted program by its plain
name, passes that program's argument rules (:mod:`._programs`), assigns no protected
variable and redirects only where the syntax settings allow. The first refusal is raised
as :class:`ShellPolicyViolation` naming the offending part.

The syntax switches left unset are decided by the mode when the policy is built (see
:class:`ShellSyntax`): under bubblewrap, globs, loops, conditionals, test commands and
here-documents pass by default, since the workspace is the only host data they can reach.

A policy's settings are fixed when it is built, so it keeps its verdicts on the last
:data:`CACHED_VERDICTS` command texts it decided: the same text checked again (by the
runtime's security check and then by the tool, or by a model that repeats itself) is
answered without a second parse, allowed or refused alike.

Absolute and relative paths as command names (``/usr/bin/git``, ``./build.sh``) are always
refused: a name is looked up on the sandbox's fixed ``PATH``, so one name means one
program, and a path could name a copy, a link or a file the command itself just wrote.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from ._config import ShellConfig, ShellMode, ShellSyntax
from ._env import protected_env_reason
from ._names import (
    INTERPRETERS,
    RESERVED_WORDS,
    SHELL_STATE_BUILTINS,
    UNCHECKED_RUNNERS,
)
from ._parse import parse_command
from ._programs import RULES, TAKES_UNKNOWN, Script, Unknown
from ._words import GLOB, Redirect, ShellPolicyViolation, SimpleCommand, Word

MAX_SCRIPT_NESTING = 4
CACHED_VERDICTS = 256
"""How many command texts a policy remembers its verdict on."""
_WRITES = frozenset({">", ">>", "&>", "&>>", ">|", "<>", ">&"})
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin"})
_TEST_BUILTINS = frozenset({"test", "["})
_LOOP_BUILTINS = frozenset({"break", "continue"})


@dataclass(frozen=True, slots=True)
class ShellVerdict:
    """A command the policy allows."""

    command: str
    programs: tuple[str, ...]
    """Every program and builtin it may run, in order of appearance (for logs and audit)."""


class ShellPolicy:
    """Decides commands for one allowlist and syntax setting (see the module docstring)."""

    def __init__(
        self,
        allowed: frozenset[str],
        syntax: ShellSyntax | None = None,
        *,
        workspace: str = "/workspace",
        mode: ShellMode = ShellMode.SANDBOXED,
    ) -> None:
        self._syntax = (syntax or ShellSyntax()).for_mode(mode)
        if self._syntax.test_commands:
            allowed |= _TEST_BUILTINS
        if self._syntax.control_flow:
            allowed |= _LOOP_BUILTINS
        self._allowed = allowed
        self._workspace = workspace.rstrip("/") or "/"
        self._verdicts: dict[str, ShellVerdict | tuple[str, str]] = {}
        """Command text -> its verdict, or the refused part and the reason; oldest first."""

    @property
    def allowed(self) -> frozenset[str]:
        """The allowlist, with the builtins its syntax switches bring (``test``, ``[``,
        ``break``, ``continue``)."""
        return self._allowed

    @property
    def syntax(self) -> ShellSyntax:
        """The syntax settings, every switch decided for the mode."""
        return self._syntax

    @property
    def workspace(self) -> str:
        """Where commands see the workspace; absolute redirection targets must be inside."""
        return self._workspace

    @classmethod
    def from_config(cls, config: ShellConfig, *, workspace: str = "/workspace") -> ShellPolicy:
        return cls(config.allowed, config.syntax, workspace=workspace, mode=config.mode)

    def check(self, command: str) -> ShellVerdict:
        """The verdict for ``command``; raises :class:`ShellPolicyViolation` to refuse."""
        verdict = self._verdicts.get(command)
        if verdict is None:
            verdict = self._decide(command)
            if len(self._verdicts) >= CACHED_VERDICTS:
                del self._verdicts[next(iter(self._verdicts))]
            self._verdicts[command] = verdict
        if isinstance(verdict, tuple):
            raise ShellPolicyViolation(*verdict)
        return verdict

    def _decide(self, command: str) -> ShellVerdict | tuple[str, str]:
        programs: list[str] = []
        try:
            self._script(command, programs, nesting=0)
        except ShellPolicyViolation as exc:
            return exc.part, exc.reason
        return ShellVerdict(command, tuple(programs))

    def _script(self, script: str, programs: list[str], *, nesting: int) -> None:
        if nesting > MAX_SCRIPT_NESTING:
            raise ShellPolicyViolation(script, "shell code nested too deeply")
        for cmd in parse_command(script, self.syntax):
            self._command(cmd, programs, nesting=nesting, depth=0)

    def _command(
        self, cmd: SimpleCommand, programs: list[str], *, nesting: int, depth: int
    ) -> None:
        if depth > MAX_SCRIPT_NESTING:
            raise ShellPolicyViolation(cmd.text, "programs nested too deeply")
        for assignment in cmd.assignments:
            if not self.syntax.assignments:
                raise ShellPolicyViolation(assignment.text, "variable assignments are not enabled")
            reason = protected_env_reason(assignment.name)
            if reason is not None:
                raise ShellPolicyViolation(assignment.text, reason)
        for redirect in cmd.redirects:
            self._redirect(redirect)
        if not cmd.argv:
            return
        name = cmd.argv[0].value
        if name is None:
            raise ShellPolicyViolation(cmd.argv[0].text, "the command name is not a literal word")
        self._name(name, cmd)
        programs.append(name)
        rule = RULES.get(name)
        if rule is None:
            return
        if cmd.args_from_stdin:
            raise ShellPolicyViolation(
                cmd.text, f"{name} has argument rules; xargs would add arguments nobody checked"
            )
        args: list[str] = []
        for word in cmd.argv[1:]:
            if word.value is not None:
                args.append(word.value)
            elif name in TAKES_UNKNOWN and (
                word.dashless or (word.test_operand and name in _TEST_BUILTINS)
            ):
                args.append(Unknown(word.text))
            else:
                raise ShellPolicyViolation(
                    word.text, f"{name} has argument rules; its arguments must be literal"
                )
        for inner in rule(cmd, args):
            if isinstance(inner, Script):
                self._script(inner.text, programs, nesting=nesting + 1)
            else:
                self._command(inner, programs, nesting=nesting, depth=depth + 1)

    def _name(self, name: str, cmd: SimpleCommand) -> None:
        if "/" in name:
            raise ShellPolicyViolation(
                name, "runs a program by path; only allowlisted program names may run"
            )
        if name in RESERVED_WORDS:
            raise ShellPolicyViolation(name, "a shell keyword in command position")
        if name not in self.allowed:
            raise ShellPolicyViolation(name, "not in the allowlist of programs")
        if name in UNCHECKED_RUNNERS or name in SHELL_STATE_BUILTINS:
            raise ShellPolicyViolation(name, "runs code or changes the shell in unchecked ways")
        if name in INTERPRETERS and (cmd.piped or cmd.args_from_stdin or _reads_stdin(cmd)):
            raise ShellPolicyViolation(
                cmd.text, f"{name} fed by a pipe or here-document runs code nobody checked"
            )

    def _redirect(self, redirect: Redirect) -> None:
        mode = self.syntax.redirections
        if mode == "any":
            return
        if mode == "none":
            raise ShellPolicyViolation(redirect.text, "redirections are not enabled")
        op = redirect.operator
        target = redirect.target
        if op in ("<<", "<<-", "<<<", ">&-", "<&-"):
            return
        if op in (">&", "<&") and target is not None and target.value in ("0", "1", "2", "-"):
            return
        if op == "<&":
            raise ShellPolicyViolation(
                redirect.text, "only descriptors 0, 1 and 2 may be duplicated"
            )
        path = self._target(redirect, target)
        if path in _DEVICES:
            return
        parts = path.split("/")
        if not path or ".." in parts:
            raise ShellPolicyViolation(redirect.text, "a redirection target must not use '..'")
        if path.startswith("/"):
            normal = posixpath.normpath(path)
            if normal != self.workspace and not normal.startswith(self.workspace + "/"):
                raise ShellPolicyViolation(
                    redirect.text, f"redirections must stay inside {self.workspace}"
                )
        if op in _WRITES and ".git" in parts:
            raise ShellPolicyViolation(redirect.text, "writing into .git is refused")

    def _target(self, redirect: Redirect, target: Word | None) -> str:
        """A redirection's path: a literal, or a glob that can match no dot-name.

        Bash expands a glob target when it matches one file. A component that starts
        with a character other than ``.`` and ``[`` never matches a name starting with a
        dot (``dotglob`` stays off: ``shopt`` is refused), so no match is ``.``, ``..``
        or ``.git``, and the literal components decide where the path leads.
        """
        if target is not None and target.value is not None:
            return target.value
        if target is None or target.shape is None or not self.syntax.globs:
            raise ShellPolicyViolation(redirect.text, "a redirection target must be a literal path")
        for part in target.shape.split("/"):
            if GLOB & set(part) and part[:1] in (".", "["):
                raise ShellPolicyViolation(
                    redirect.text, "a glob in a redirection target may not start with '.' or '['"
                )
        return target.shape


def _reads_stdin(cmd: SimpleCommand) -> bool:
    return any(
        r.operator in ("<", "<<", "<<-", "<<<", "<&", "<>") and r.fd in (None, 0)
        for r in cmd.redirects
    )
