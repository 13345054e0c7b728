"""The runtime as what runs on it sees it: :class:`ToolHost`.

The agent loop, delegation, scheduled turns and the MCP server run calls through a runtime,
and the runtime builds delegation and the MCP servers from its config. If they imported
:class:`~toolcage.runtime.Runtime`, the two would import each other. Instead the core owns
this Protocol (the lower layer owns the seam), they take a :class:`ToolHost`, and
:class:`~toolcage.runtime.Runtime` satisfies it structurally; ``Runtime.from_config`` hands
itself to them when it is built (``delegate.attach(runtime)``, ``mcp.attach(runtime)``).

The members are those they read: the config (loop limits, argument limits, agents), the
registry (per-agent listings, withheld MCP servers), the pipeline (prepared calls,
concurrency gates, tool limits), the safety gate (approval ahead of a round), the output
store, the state store, ``execute_call``, and ``aclose`` (serving a runtime ends by
closing it). ``approval`` is settable: the MCP server puts its elicitation policy there for
the runtime it serves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

# A real import, not a type-only one: ``abc`` resolves this class's own annotations when it
# publishes it (``policies._public.publish``), and ``approval`` is one.
from ._approval import ApprovalPolicy

if TYPE_CHECKING:
    from toolcage.host_bindings import StateServices
    from toolcage.policies import ToolcageConfig

    from ._approval import SafetyGate
    from ._output_store import OutputStore
    from ._pipeline import ToolPipeline
    from ._registry import ToolRegistry
    from ._result import ToolResult
    from ._tool import ToolCall, ToolExecutionContext


class ToolHost(Protocol):
    """A runtime as the agent loop, delegation, scheduled turns and the MCP server use it;
    :class:`~toolcage.runtime.Runtime` is one."""

    approval: ApprovalPolicy | None
    """Who approves privileged calls; settable (the MCP server sets its own)."""

    @property
    def config(self) -> ToolcageConfig: ...

    @property
    def registry(self) -> ToolRegistry: ...

    @property
    def pipeline(self) -> ToolPipeline: ...

    @property
    def gate(self) -> SafetyGate: ...

    @property
    def output_store(self) -> OutputStore: ...

    @property
    def state(self) -> StateServices | None: ...

    async def execute_call(self, call: ToolCall, context: ToolExecutionContext) -> ToolResult:
        """Run one call, as a model made it, through the full pipeline."""
        ...

    async def aclose(self) -> None:
        """Release what the runtime holds; who serves a runtime closes it when done."""
        ...
