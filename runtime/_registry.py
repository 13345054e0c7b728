"""The set of tools a runtime knows, and which of them each agent may call."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import ToolNotFoundError, UsageError
from ._tool import TOOL_NAME, TOOL_NAME_MAX, DeclaresNeeds, FunctionDecl, SafetyTier, Tool


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """One row of the listing shown to operators and UIs."""

    name: str
    description: str
    safety_tier: SafetyTier
    timeout: float
    needs: tuple[str, ...]
    """What the tool needs from the host (mounts, network, the shell sidecar, ...)."""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    """JSON Schema of the tool's arguments, as models are offered it."""


class ToolRegistry:
    """Tools by unique snake_case name, with per-agent enabled sets.

    >>> registry = ToolRegistry()
    >>> registry.register(my_tool)                      # doctest: +SKIP
    >>> registry.enable_only("support_bot", ["file_read"])
    >>> registry.get("file_write", agent_id="support_bot")  # doctest: +SKIP
    Traceback (most recent call last):
    ToolNotFoundError: Tool file_write is not available
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._decls: dict[str, FunctionDecl] = {}
        self._enabled: dict[str, frozenset[str]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add a tool; its name must be snake_case and not taken."""
        decl = tool.schema()
        if len(decl.name) > TOOL_NAME_MAX:
            raise UsageError(
                f"tool name {decl.name[:TOOL_NAME_MAX]!r}... is longer than {TOOL_NAME_MAX} "
                "characters, the most model providers accept"
            )
        if not TOOL_NAME.fullmatch(decl.name):
            raise UsageError(
                f"tool name {decl.name!r} is not snake_case (lower-case words joined by '_')"
            )
        if decl.name in self._tools:
            raise UsageError(f"a tool named {decl.name!r} is already registered")
        if decl.parameters.get("type") != "object":
            raise UsageError(f"tool {decl.name!r}: parameters must be a JSON Schema object")
        self._tools[decl.name] = tool
        self._decls[decl.name] = decl

    def enable_only(self, agent_id: str, names: Iterable[str]) -> None:
        """Restrict ``agent_id`` to ``names``; agents never restricted see every tool."""
        names = frozenset(names)
        unknown = sorted(names - self._tools.keys())
        if unknown:
            raise UsageError(f"agent {agent_id!r} enables unknown tools: {', '.join(unknown)}")
        self._enabled[agent_id] = names

    def is_enabled(self, name: str, agent_id: str) -> bool:
        enabled = self._enabled.get(agent_id)
        return name in self._tools and (enabled is None or name in enabled)

    def get(self, name: str, agent_id: str = "default") -> Tool:
        """The tool called ``name``, if ``agent_id`` may call it."""
        if not self.is_enabled(name, agent_id):
            raise ToolNotFoundError(f"Tool {name} is not available")
        return self._tools[name]

    def declaration(self, name: str) -> FunctionDecl:
        """The cached declaration of a registered tool."""
        return self._decls[name]

    def declarations(self, agent_id: str = "default") -> list[FunctionDecl]:
        """What a model is offered: the declarations of the tools ``agent_id`` may call."""
        return [d for n, d in self._decls.items() if self.is_enabled(n, agent_id)]

    def listing(self, agent_id: str = "default") -> list[ToolInfo]:
        """Name, description, tier, timeout, needs and parameters of each tool, by name."""
        rows = []
        for name in sorted(self._tools):
            if not self.is_enabled(name, agent_id):
                continue
            tool, decl = self._tools[name], self._decls[name]
            needs = tool.needs if isinstance(tool, DeclaresNeeds) else ()
            rows.append(
                ToolInfo(
                    name, decl.description, tool.safety_tier, tool.timeout, needs, decl.parameters
                )
            )
        return rows

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
