"""The ``[rate_limits.NAME]`` sections: how often tools may be called, and how much the
network tools may fetch.

::

    [rate_limits.network]
    tools = ["network"]      # tool names, or classes: read_only, side_effecting,
                             # privileged, network, "*" (every tool)
    per = ["user"]           # one budget per user; ["agent"], ["user", "agent"];
                             # [] (the default): one budget for the whole host
    calls = 30               # a token bucket: refills at calls / window per second,
    window = 60.0            # holds at most burst calls (default: calls)
    burst = 10
    bytes = 10_485_760       # response bytes per window, counted as they arrive

Every limit a tool matches applies: a call is admitted only when each of them has a call
left. ``bytes`` is a quota per fixed window (it starts with the first request that finds
none running): once it is spent, the next request of a matching tool is refused until the
window ends, and a response that would overspend it is cut. It counts the tools that fetch
through the host's HTTP client (those that need ``http`` or ``search``); the ``network``
class also holds tools whose traffic is not counted (a shell or an MCP server with the
network), whose calls it limits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from ._principal import Principal

TIERS = ("read_only", "side_effecting", "privileged")
"""Safety tiers a limit can name as its tools."""
NETWORK = "network"
"""The class of tools that reach the network."""
EVERY_TOOL = "*"
CLASSES = (*TIERS, NETWORK, EVERY_TOOL)
NETWORK_NEEDS = frozenset({"http", "search", "network"})
"""What a tool declares it needs when it reaches the network (``http`` and ``search``
guests fetch through the host's HTTP client; ``network``: a shell with the network, an MCP
server over HTTP)."""
METERED_NEEDS = frozenset({"http", "search"})
"""What a tool needs when its response bytes are counted (the host's HTTP client)."""

_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}(__[a-z0-9_]{1,64})?$")
MAX_WINDOW = 366 * 86400.0


class RateLimitConfig(BaseModel):
    """One ``[rate_limits.NAME]`` section (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: tuple[str, ...]
    """Tool names and classes the limit applies to."""
    per: tuple[Literal["user", "agent"], ...] = ()
    """What one budget belongs to: each user, each agent, each user of each agent; empty:
    the whole host."""
    calls: int | None = Field(None, gt=0)
    """Calls per ``window`` (the bucket's refill rate)."""
    window: float = Field(60.0, gt=0, le=MAX_WINDOW)
    """Seconds."""
    burst: int | None = Field(None, gt=0)
    """The most calls the bucket holds (default: ``calls``)."""
    bytes: int | None = Field(None, gt=0)
    """Response bytes per ``window``, for network tools."""

    @field_validator("tools")
    @classmethod
    def _tool_entries(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("name at least one tool or class")
        for entry in value:
            if entry not in CLASSES and not _TOOL_NAME.match(entry):
                raise ValueError(
                    f"tools: {entry!r} is neither a tool name nor a class "
                    f"({', '.join(repr(c) for c in CLASSES)})"
                )
        return value

    @field_validator("per")
    @classmethod
    def _unique_keys(
        cls, value: tuple[Literal["user", "agent"], ...]
    ) -> tuple[Literal["user", "agent"], ...]:
        if len(set(value)) != len(value):
            raise ValueError(f"per: {list(value)} names a key twice")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RateLimitConfig:
        if self.calls is None and self.bytes is None:
            raise ValueError("set calls (a call budget) or bytes (a byte quota), or both")
        if self.burst is not None and self.calls is None:
            raise ValueError("burst needs calls (it is the call bucket's size)")
        if self.bytes is not None:
            others = [t for t in self.tools if t in CLASSES and t != NETWORK]
            if others:
                raise ValueError(
                    f"bytes: counted only for network tools; tools names {others[0]!r}"
                    " (use the class 'network' or network tools' names)"
                )
        return self

    @property
    def bucket_size(self) -> int | None:
        """The most calls the bucket holds."""
        return self.burst if self.burst is not None else self.calls

    @property
    def refill_per_second(self) -> float:
        """Calls the bucket regains each second."""
        return (self.calls or 0) / self.window


@dataclass(frozen=True, slots=True)
class RateRule:
    """A configured limit, resolved for one tool."""

    name: str
    """The limit's name (its ``[rate_limits.NAME]``)."""
    config: RateLimitConfig
    """Its settings."""
    metered: bool
    """Whether its byte quota counts this tool's responses."""

    def key(self, kind: str, principal: Principal) -> str:
        """The counter of ``kind`` (``calls``, ``bytes``) this rule keeps for a caller
        (the unit separator never occurs in a principal's ids, which are printable)."""
        parts = [kind, self.name]
        if "user" in self.config.per:
            parts.append("user=" + principal.user_id)
        if "agent" in self.config.per:
            parts.append("agent=" + principal.agent_id)
        return "\x1f".join(parts)

    def whose(self, principal: Principal) -> str:
        """Whose budget this is, for messages: ``user 'ada'``, ``the host``."""
        owners = []
        if "user" in self.config.per:
            owners.append(f"user {principal.user_id!r}")
        if "agent" in self.config.per:
            owners.append(f"agent {principal.agent_id!r}")
        return " and ".join(owners) if owners else "the host"


RateLimitName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
"""A limit's name: 1-64 letters, digits, ``_`` or ``-`` (it names the limit's counters)."""
RateLimits = dict[RateLimitName, RateLimitConfig]
"""The ``[rate_limits]`` table: each limit by name."""


def matches(config: RateLimitConfig, name: str, tier: str, needs: tuple[str, ...]) -> bool:
    """Whether a limit applies to the tool ``name`` of ``tier`` that needs ``needs``."""
    for entry in config.tools:
        if entry in (name, EVERY_TOOL, tier):
            return True
        if entry == NETWORK and NETWORK_NEEDS.intersection(needs):
            return True
    return False


def rules_for(
    limits: dict[str, RateLimitConfig], name: str, tier: str, needs: tuple[str, ...]
) -> tuple[RateRule, ...]:
    """The limits that apply to a tool, in config order."""
    metered = bool(METERED_NEEDS.intersection(needs))
    return tuple(
        RateRule(limit, config, metered and config.bytes is not None)
        for limit, config in limits.items()
        if matches(config, name, tier, needs)
    )
