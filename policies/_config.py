"""The operator's TOML config, as frozen pydantic models.

Every section forbids unknown keys, so a typo is an error rather than a silently ignored
setting, and every error names its key path::

    $ toolcage tools --config bad.toml
    error: bad.toml: limits.truncate_bytes: Input should be greater than 0 (got -1)

Relative paths in the file resolve against the file's own directory; with no file at all,
the built-in defaults apply.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._audit import AuditConfig, TelemetryConfig
from ._channel import ChannelConfig
from ._concurrency import Concurrency
from ._delegation import DelegationConfig
from ._egress import EgressConfig
from ._guest_tools import GuestToolsConfig
from ._images import ImagesConfig
from ._mcp import McpConfig
from ._mount_areas import MountsConfig
from ._principal import ApprovalScope
from ._rate_limits import RateLimits
from ._scheduler import SchedulerConfig
from ._secrets import SecretsSection
from ._state import StateConfig
from .shell import ShellConfig


class ConfigError(ValueError):
    """The config file is missing, unreadable, not TOML, or has a bad key or value."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LimitsConfig(_Section):
    """Limits that apply to every tool unless a ``[tools.NAME]`` entry overrides them."""

    truncate_bytes: int = Field(16 * 1024, gt=0)
    """Tool output beyond this many UTF-8 bytes is truncated (the full text is kept)."""
    default_timeout: float = Field(30.0, gt=0)
    """Seconds a tool call may take when the tool and config name no other timeout."""
    max_argument_bytes: int = Field(1024 * 1024, gt=0)
    """Arguments larger than this (as JSON) are refused before anything else looks at them."""
    guests_on_one_cpu: bool = True
    """Run WASM guest threads on one CPU, where their hand-offs to wasmtime's WASI
    file-operation threads are cheap; false lets parallel CPU-heavy guests spread over every
    CPU."""


class OutputStoreConfig(_Section):
    """Bounds of the store that keeps truncated outputs for ``tool_output_read``."""

    max_entries: int = Field(256, gt=0)
    max_total_bytes: int = Field(64 * 1024 * 1024, gt=0)
    max_age_seconds: float = Field(3600.0, gt=0)


class ApprovalConfig(_Section):
    """Which privileged tools run without asking."""

    auto_approve: tuple[str, ...] = ()
    """Privileged tools the operator allows outright (no approval callback is asked)."""
    remember: ApprovalScope = ApprovalScope.USER_AGENT
    """Whose later calls an approver's "always" covers (for the same tool and arguments):
    ``session``, ``user_agent`` (the default), ``user`` or ``runtime``."""


class ToolOverride(_Section):
    """Per-tool settings, under ``[tools.NAME]``."""

    timeout: float | None = Field(None, gt=0)
    """Seconds; replaces the tool's own timeout."""
    truncate_bytes: int | None = Field(None, gt=0)
    """Replaces ``limits.truncate_bytes`` for this tool."""
    memory_bytes: int | None = Field(None, gt=0)
    """Memory limit for a WASM guest."""
    output_bytes: int | None = Field(None, gt=0)
    """Cap on the raw stdout/stderr a guest or command may produce."""
    concurrency: str | None = None
    """Replaces the tool's concurrency mode: ``parallel``, ``serial``, ``limited(N)``,
    ``exclusive_by_type(TYPE, ARG, ...)`` (see :mod:`._concurrency`)."""
    component: Path | None = None
    """``python_exec`` only: the operator's build of its WebAssembly component, run instead
    of the bundled one (relative paths resolve against the config file's directory)."""

    @field_validator("concurrency")
    @classmethod
    def _known_concurrency(cls, value: str | None) -> str | None:
        return None if value is None else Concurrency.parse(value).text


class AgentConfig(_Section):
    """An agent profile, under ``[agents.NAME]``."""

    tools: tuple[str, ...]
    """The tools this agent may call; every other tool is ``not_found`` for it."""
    model: str = "default"
    """The model it runs on when ``delegate_to_agent`` hands it a goal: a name among the
    model clients the host gives ``Runtime.from_config(models=...)``."""
    system_prompt: str = ""
    """Its system prompt in a delegated turn."""
    description: str = ""
    """What it is good at, shown to the models that may delegate to it."""
    session: Literal["branch", "worker"] = "branch"
    """The session kind its delegated turns run as: ``branch`` (sends on the delegating
    session's channel) or ``worker`` (read-only: no channel, state store or writes)."""


class LoopLimits(_Section):
    """The ``[loop]`` section: budgets of one agent turn (``run_turn``)."""

    max_rounds: int = Field(25, gt=0)
    """Model calls per turn."""
    max_total_tokens: int | None = Field(None, gt=0)
    """Input plus output tokens per turn (as the provider reports them); unset: no limit."""
    max_validation_retries: int = Field(2, ge=0)
    """Retries the model gets after a validation error before the error is surfaced."""
    max_cost: float | None = Field(None, gt=0)
    """Spend per turn, in the unit of the prices below; unset: no limit."""
    input_price: float = Field(0.0, ge=0)
    """Price of a million input tokens."""
    output_price: float = Field(0.0, ge=0)
    """Price of a million output tokens."""
    timeout_retries: int = Field(2, ge=0)
    """Times a ``read_only`` call that timed out is run again before its timeout stands."""
    timeout_backoff: float = Field(0.5, ge=0)
    """Seconds before the first such retry; each further one waits twice as long."""

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """What this many tokens cost at these prices."""
        return (input_tokens * self.input_price + output_tokens * self.output_price) / 1e6


class ToolcageConfig(_Section):
    """The whole config file."""

    limits: LimitsConfig = LimitsConfig()
    output_store: OutputStoreConfig = OutputStoreConfig()
    approval: ApprovalConfig = ApprovalConfig()
    tools: dict[str, ToolOverride] = {}
    agents: dict[str, AgentConfig] = {}
    loop: LoopLimits = LoopLimits()
    shell: ShellConfig = ShellConfig()
    egress: EgressConfig = EgressConfig()
    mounts: MountsConfig = MountsConfig()
    state: StateConfig = StateConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    channel: ChannelConfig = ChannelConfig()
    delegation: DelegationConfig = DelegationConfig()
    mcp: McpConfig = McpConfig()
    guest_tools: GuestToolsConfig = GuestToolsConfig()
    images: ImagesConfig = ImagesConfig()
    secrets: SecretsSection = {}
    """``[secrets.NAME]``: credentials the host adds to HTTP requests (:mod:`._secrets`)."""
    audit: AuditConfig = AuditConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    rate_limits: RateLimits = {}
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    """Directory that relative paths resolve against (the config file's own directory)."""


def load_config(path: str | Path | None = None) -> ToolcageConfig:
    """Read and validate a config file; ``None`` gives the built-in defaults."""
    if path is None:
        return ToolcageConfig()
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    return parse_config(raw, base_dir=path.resolve().parent, source=str(path))


def parse_config(raw: dict[str, Any], *, base_dir: Path, source: str = "config") -> ToolcageConfig:
    """Validate an already-parsed config mapping."""
    if "base_dir" in raw:
        raise ConfigError(
            f"{source}: base_dir: unknown key (paths resolve against the file's directory)"
        )
    deep = _too_deep(raw)
    if deep is not None:
        raise ConfigError(f"{source}: {deep}: nested more than {MAX_DEPTH} levels deep")
    try:
        return ToolcageConfig.model_validate({**raw, "base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None


MAX_DEPTH = 16
"""Tables and arrays nest at most this deep; no setting needs more than six levels, and the
limit keeps validation and error messages clear of the recursion limit."""


def _too_deep(raw: dict[str, Any]) -> str | None:
    """The key path where ``raw`` nests past :data:`MAX_DEPTH`, if it does (no recursion)."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(raw, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return ".".join(path)
        if isinstance(value, dict):
            stack.extend((v, (*path, str(k))) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, str(i))) for i, v in enumerate(value))
    return None


def _describe(exc: ValidationError, shown: int = 10) -> str:
    problems = []
    errors = exc.errors()
    for err in errors[:shown]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            problems.append(f"{where}: unknown key")
        elif err["type"] == "value_error":  # a validator's own message names the value
            problems.append(f"{where}: {err['msg'].removeprefix('Value error, ')}")
        else:
            problems.append(f"{where}: {err['msg']} (got {_preview(err['input'])})")
    if len(errors) > shown:
        problems.append(f"and {len(errors) - shown} more")
    return "; ".join(problems)


def _preview(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
