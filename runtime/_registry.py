"""The set of tools a runtime knows, and which of them each agent may call.

Tools may be added after the runtime is built -- the tools of an MCP server that starts
only at a retry are added from the MCP connections' thread -- so the tables are replaced,
never changed in place: a reader (a lookup, a listing, an iteration) works on the tables
as they were when it began, and writers take a lock. Until then such a source *withholds*
its names (:meth:`ToolRegistry.withhold`): a lookup of one gets the source's error rather
than ``not_found``, and agents may already be enabled for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import ToolError, ToolNotFoundError, UsageError
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
        self._withheld: dict[str, Callable[[], ToolError]] = {}
        self._lock = threading.Lock()
        self.add(tools)

    def register(self, tool: Tool) -> None:
        """Add a tool; its name must be snake_case and not taken."""
        self.add([tool])

    def add(self, tools: Iterable[Tool]) -> None:
        """Add tools (all or, if one is refused, none), from any thread."""
        with self._lock:
            decls = dict(self._decls)
            added = dict(self._tools)
            for tool in tools:
                decl = self._checked(tool, added)
                added[decl.name] = tool
                decls[decl.name] = decl
            self._decls = decls  # first: a tool found is always declared
            self._tools = added

    @staticmethod
    def _checked(tool: Tool, taken: Mapping[str, Tool]) -> FunctionDecl:
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
        if decl.name in taken:
            raise UsageError(f"a tool named {decl.name!r} is already registered")
        if decl.parameters.get("type") != "object":
            raise UsageError(f"tool {decl.name!r}: parameters must be a JSON Schema object")
        return decl

    def withhold(self, prefix: str, why: Callable[[], ToolError]) -> None:
        """Names starting with ``prefix`` belong to a source not available now: looking one
        up raises ``why()``, and agents may be enabled for them before they are added."""
        with self._lock:
            self._withheld = self._withheld | {prefix: why}

    def release(self, prefix: str) -> None:
        """The source of ``prefix`` has added its tools (or is gone): its names are
        looked up as any other."""
        with self._lock:
            self._withheld = {key: why for key, why in self._withheld.items() if key != prefix}

    def withheld(self) -> list[tuple[str, ToolError]]:
        """Each withheld prefix, by prefix, with why its tools are not available."""
        return [(prefix, why()) for prefix, why in sorted(self._withheld.items())]

    def enable_only(self, agent_id: str, names: Iterable[str]) -> None:
        """Restrict ``agent_id`` to ``names``; agents never restricted see every tool."""
        names = frozenset(names)
        unknown = sorted(
            name
            for name in names - self._tools.keys()
            if not any(name.startswith(prefix) for prefix in self._withheld)
        )
        if unknown:
            raise UsageError(f"agent {agent_id!r} enables unknown tools: {', '.join(unknown)}")
        with self._lock:
            self._enabled = self._enabled | {agent_id: names}

    def is_enabled(self, name: str, agent_id: str) -> bool:
        enabled = self._enabled.get(agent_id)
        return name in self._tools and (enabled is None or name in enabled)

    def get(self, name: str, agent_id: str = "default") -> Tool:
        """The tool called ``name``, if ``agent_id`` may call it."""
        tool = self._tools.get(name)
        if tool is None or not self.is_enabled(name, agent_id):
            raise self._withheld_error(name, agent_id) or ToolNotFoundError(
                f"Tool {name} is not available"
            )
        return tool

    def _withheld_error(self, name: str, agent_id: str) -> ToolError | None:
        if name in self._tools:
            return None  # registered, but not for this agent
        enabled = self._enabled.get(agent_id)
        for prefix, why in self._withheld.items():
            if name.startswith(prefix) and (enabled is None or name in enabled):
                return why()
        return None

    def declaration(self, name: str) -> FunctionDecl:
        """The cached declaration of a registered tool."""
        return self._decls[name]

    def declarations(self, agent_id: str = "default") -> list[FunctionDecl]:
        """What a model is offered: the declarations of the tools ``agent_id`` may call."""
        return [d for n, d in self._decls.items() if self.is_enabled(n, agent_id)]

    def listing(self, agent_id: str = "default") -> list[ToolInfo]:
        """Name, description, tier, timeout, needs and parameters of each tool, by name."""
        rows = []
        tools, decls = self._tools, self._decls
        for name in sorted(tools):
            if not self.is_enabled(name, agent_id):
                continue
            tool, decl = tools[name], decls[name]
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
