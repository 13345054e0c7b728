"""The ``[shell]`` section: how the shell runs, what it may run, and its limits.

::

    [shell]
    mode = "sandboxed"              # or "host" (no sandbox; development only) or "disabled"
    workspace = "workspace"         # the only host directory commands see (read-write)
    extra_allow = ["jq"]            # added to the default allowlist (or replace it with `allow`)
    network = false

    [shell.syntax]                  # each switch admits one more construct
    expansions = false
    redirections = "workspace"      # "none" | "workspace" | "any"
    globs = true                    # globs, arithmetic, heredocs, test_commands, control_flow:
    control_flow = false            # unset, on in sandboxed mode and off in host mode

    [shell.limits]
    timeout = 30                    # seconds, unless a call asks for more (up to max_timeout)
    processes = 256                 # per command, fork bombs included

Programs are named by their basename; which ones need care, and why some can never be
allowed, is decided in :mod:`._programs`.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from .._host_template import HostTemplate
from ._env import protected_env_reason
from ._names import DEFAULT_ALLOW, refusal_for_allowlisting


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ShellMode(enum.StrEnum):
    """Where commands run."""

    SANDBOXED = "sandboxed"
    """Under bubblewrap: read-only system, the workspace read-write, no network (default)."""
    HOST = "host"
    """Unsafe: directly on the host, as the sidecar's user; for development only."""
    DISABLED = "disabled"
    """No shell: ``shell_exec`` answers ``permission_denied``."""


class ShellSyntax(_Section):
    """Which shell syntax passes the policy beyond plain literal words.

    A command is always literal words (quoted or not) joined by ``&&``, ``||``, ``;``,
    ``|`` and newlines, plus redirections into the workspace and ``NAME=value``
    assignments. Each switch admits one more construct; a word the policy cannot prove
    literal still never names a program, and programs with argument rules refuse it
    unless their rule proves it harmless.

    The switches left unset (``None``) follow the mode: on in ``sandboxed`` mode, where
    bubblewrap leaves the workspace as the only host data a glob can list or a loop can
    touch, and off in ``host`` mode (see :meth:`for_mode`).
    """

    expansions: bool = False
    """``$NAME`` and ``${NAME}`` parameter expansion (a loop's own variable needs no switch)."""
    fixed_variables: bool = True
    """``$HOME``, ``${HOME}`` and a word's leading ``~`` or ``~/`` stand for the sandbox's
    fixed home, ``/tmp`` (known to the policy: ``HOME`` is protected and set by the
    sidecar); ``"$PWD"`` for the working directory, which is always absolute, so never an
    option (unquoted, its value is unknown: bash splits it)."""
    substitutions: bool = False
    """``$(...)``, backticks and ``<(...)``; the inner commands are checked too."""
    arithmetic: bool | None = None
    """``$((...))`` over number literals (a variable's value would be evaluated as code)."""
    globs: bool | None = None
    """Unquoted ``*``, ``?`` and ``[...]``; as a redirection target only a pattern that
    stays inside the workspace and matches no dot-name."""
    tilde: bool = False
    """Unquoted ``~``."""
    braces: bool = False
    """Brace expansion, ``{a,b}`` and ``{1..3}``."""
    redirections: Literal["none", "workspace", "any"] = "workspace"
    """``workspace``: targets inside the workspace (and ``/dev/null``) only."""
    heredocs: bool | None = None
    """``<<`` and ``<<<``: a quoted delimiter, or an unquoted one over text with no ``$``,
    backquote or backslash (nothing in it expands)."""
    test_commands: bool | None = None
    """``test``, ``[ ... ]`` and ``[[ ... ]]``, whose operands are checked: never ``-v`` or
    ``-R`` (bash evaluates an array subscript there), and ``[[``'s arithmetic
    comparisons over number literals only."""
    control_flow: bool | None = None
    """``for``/``while``/``until``/``if``/``case``, ``!``, ``break`` and ``continue``; their
    words and bodies are checked like any command. The variable of a ``for`` loop, and the
    names of ``while read [-r] NAME...``, may be expanded in the loop's body (their values
    are unknown: they never name a program)."""
    background: bool = False
    """A trailing ``&`` (``shell_exec``'s ``background`` flag is the supported way)."""
    subshells: bool = False
    """``( ... )`` and ``{ ...; }`` groups."""
    assignments: bool = True
    """``NAME=value`` (alone, before a command, or with ``export``); protected names never."""

    def describe(self) -> str:
        """What a command may hold under these settings, in a sentence for a model."""
        parts = ["literal words"]
        if self.fixed_variables:
            parts.append("$HOME, ~ and $PWD")
        for switch, text in _DESCRIPTIONS:
            if getattr(self, switch):
                parts.append(text)
        return ", ".join(parts) + "; joined by &&, ||, ;, | and newlines"

    def for_mode(self, mode: ShellMode) -> ShellSyntax:
        """These settings with every unset switch decided for ``mode``."""
        default = mode is ShellMode.SANDBOXED
        unset = {name: default for name in _MODE_SWITCHES if getattr(self, name) is None}
        return self.model_copy(update=unset) if unset else self


_DESCRIPTIONS = (
    ("globs", "globs (a glob never names a program)"),
    ("expansions", "$NAME"),
    ("substitutions", "$(...)"),
    ("arithmetic", "$((...)) over numbers"),
    ("control_flow", "for/while/until/if/case (a for or while-read loop's variable may be "
     "used in its body, quoted as \"$f\")"),
    ("test_commands", "test, [ ] and [[ ]]"),
    ("heredocs", "here-documents (<<'EOF') and here-strings"),
    ("subshells", "( ) and { } groups"),
)  # fmt: skip
_MODE_SWITCHES = ("globs", "arithmetic", "heredocs", "test_commands", "control_flow")
"""Switches that default to on under bubblewrap and off in host mode."""


class ShellLimits(_Section):
    """Per-command limits (each command gets its own sandbox and its own counts)."""

    timeout: float = Field(30.0, gt=0)
    """Seconds a command may run when the call names no timeout."""
    max_timeout: float = Field(600.0, gt=0)
    """The most a call may ask for."""
    cpu_seconds: int = Field(300, gt=0)
    """RLIMIT_CPU of each process."""
    memory_bytes: int = Field(4 * 1024**3, ge=64 * 1024**2)
    """RLIMIT_AS (address space) of each process."""
    file_bytes: int = Field(1024**3, gt=0)
    """RLIMIT_FSIZE: the largest file a command may write."""
    processes: int = Field(256, ge=8)
    """Processes and threads one command may have at once (contains fork bombs)."""
    tmp_bytes: int = Field(256 * 1024**2, gt=0)
    """Size of the command's private ``/tmp``."""
    output_bytes: int = Field(1024**2, gt=0, le=1024**2)
    """Bytes of stdout and of stderr kept per command (head and tail; the rest is counted)."""
    background_seconds: float = Field(3600.0, gt=0)
    """How long a background command may run before it is killed."""
    background_jobs: int = Field(16, gt=0)
    """Background commands running at once, over all sessions."""
    concurrent_commands: int = Field(32, gt=0)
    """Foreground commands running at once; more wait for a slot."""
    sessions: int = Field(1024, gt=0)
    """Sessions kept; beyond this the least recently used idle one is forgotten."""

    @model_validator(mode="after")
    def _timeouts(self) -> ShellLimits:
        if self.timeout > self.max_timeout:
            raise ValueError(
                f"timeout ({self.timeout:g}) must not exceed max_timeout ({self.max_timeout:g})"
            )
        return self


class ShellConfig(_Section):
    """The ``[shell]`` section (see the module docstring)."""

    mode: ShellMode = ShellMode.SANDBOXED
    workspace: Path = Path("workspace")
    """Host directory bound read-write at ``/workspace``; relative to the config file. It
    may name the principal (``users/{user}/workspace``): each user's commands then see
    their own directory, made on their first command (sandboxed mode only)."""
    allow: tuple[str, ...] = DEFAULT_ALLOW
    """Programs and builtins commands may run, by name."""
    extra_allow: tuple[str, ...] = ()
    """Added to ``allow`` (so the defaults need not be restated)."""
    syntax: ShellSyntax = ShellSyntax()
    network: bool = False
    """Share the host's network with commands (off: a private loopback only)."""
    limits: ShellLimits = ShellLimits()
    env: dict[str, str] = {}
    """Extra environment for every command (protected names are refused)."""
    sandbox_uid: int = Field(65534, gt=0)
    """Host uid commands run as when the sidecar itself runs as root (root's own processes
    escape the process limit); the workspace must be writable for it."""

    @field_validator("allow", "extra_allow")
    @classmethod
    def _programs(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            reason = refusal_for_allowlisting(name)
            if reason is not None:
                raise ValueError(f"{name!r}: {reason}")
        return names

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: Path, info: ValidationInfo) -> Path:
        if HostTemplate.parse(value).per_principal and info.data.get("mode") is ShellMode.HOST:
            raise ValueError(
                f'{str(value)!r} names the principal, which needs mode = "sandboxed": in '
                "host mode commands see the whole host, so no workspace keeps users apart"
            )
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            reason = protected_env_reason(name)
            if reason is not None:
                raise ValueError(f"{name!r}: {reason}")
        return env

    @property
    def effective_syntax(self) -> ShellSyntax:
        """``syntax`` with its unset switches decided for ``mode``."""
        return self.syntax.for_mode(self.mode)

    @property
    def allowed(self) -> frozenset[str]:
        """``allow`` and ``extra_allow`` together."""
        return frozenset(self.allow) | frozenset(self.extra_allow)

    def workspace_path(self, base_dir: Path) -> Path:
        """The workspace as an absolute host path (relative ones resolve against ``base_dir``);
        for a workspace naming the principal, the path with its placeholders."""
        return Path(str(self.workspace_template(base_dir)))

    def workspace_template(self, base_dir: Path) -> HostTemplate:
        """The workspace as a template with an absolute fixed parent."""
        return HostTemplate.parse(self.workspace).absolute(base_dir)
