"""``toolcage mcp``: the runtime's tools served over the Model Context Protocol.

One low-level :class:`mcp.server.lowlevel.Server` answers ``tools/list`` and ``tools/call``
for the tools of one agent. Every call goes through :meth:`ToolHost.execute_call`, so hooks,
approval, validation, timeouts and truncation apply as they do in-process, and a failure
carries the message a model would get, with ``isError`` set and the envelope as
``structuredContent``. A success's envelope is its ``structuredContent`` too, so its details
and artifacts reach the client beside the content; its display line, which is for people,
goes in ``_meta`` under :data:`DISPLAY_META`.

Progress a tool reports is queued by the synchronous callback and sent by a task beside the
call as ``notifications/progress``. The SDK cancels the handler's task on
``notifications/cancelled``; the pipeline then stops the guest or the command.

A privileged call asks the client through form elicitation when the client declared it;
without it the call is refused, unless the operator's ``approval.auto_approve`` names the tool
(the gate admits those before it asks anyone).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import secrets
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from toolcage.policies import Principal

from ..._approval import Approval, ApprovalRequest
from ..._errors import PermissionDeniedError
from ..._host import ToolHost
from ..._result import ImageContent, TextContent, ToolResult
from ..._tool import ProgressUpdate, ToolCall, ToolExecutionContext
from ..._version import toolcage_version
from ._annotations import annotations_for

DISPLAY_META = "toolcage/display"
"""The ``_meta`` key of a result's display line."""
PROGRESS_BUFFER = 64
"""Progress updates queued per call; while the queue is full, further updates are dropped
(progress is advisory, and a tool must never wait on its client)."""

_CONTEXT_KEY = "toolcage/context"
"""Where a connection's :class:`ToolExecutionContext` is kept in its state."""

_request: contextvars.ContextVar[ServerRequestContext[Any, Any] | None] = contextvars.ContextVar(
    "toolcage_mcp_request", default=None
)

_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {"type": "boolean", "title": "Run this call", "default": False},
    },
    "required": ["approve"],
}


class ElicitationApproval:
    """An approval policy that asks the MCP client of the current call (form elicitation)."""

    async def approve(self, request: ApprovalRequest) -> Approval:
        ctx = _request.get()
        if ctx is None or not _can_elicit(ctx):
            raise PermissionDeniedError(
                f"Tool {request.tool} is privileged and needs approval, but the MCP client "
                "cannot be asked (it does not support elicitation)"
            )
        try:
            result = await ctx.session.elicit_form(
                f"Allow {request.tool} to run with {dict(request.arguments)!r}?",
                _APPROVAL_SCHEMA,
                related_request_id=ctx.request_id,
            )
        except MCPError as exc:
            raise PermissionDeniedError(
                f"Tool {request.tool} needs approval, and asking the MCP client failed: "
                f"{exc.error.message}"
            ) from None
        content = result.content or {}
        accepted = result.action == "accept" and content.get("approve") is True
        return Approval.ALLOW_ONCE if accepted else Approval.DENY


def _connection_state(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    """The scratch state of the client connection ``ctx`` came on, kept across its requests.

    The SDK builds a ``ServerSession`` per request, so the session object is no key for a
    client; the connection it proxies is, and its ``state`` dict is the SDK's documented
    per-connection store. The low-level server hands handlers no public way to it, so this
    is the one place that reads the session's private ``_connection``
    (``tests/adversarial/principals/test_mcp.py`` fails if the pinned SDK moves it).
    """
    state: dict[str, Any] = ctx.session._connection.state
    return state


def _can_elicit(ctx: ServerRequestContext[Any, Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and capabilities.elicitation is not None


def build_server(runtime: ToolHost, agent_id: str = "default") -> Server[Any]:
    """An MCP server over ``runtime``'s tools for ``agent_id``; the runtime's approval
    policy becomes :class:`ElicitationApproval`."""
    runtime.approval = ElicitationApproval()

    def context_of(ctx: ServerRequestContext[Any, Any]) -> ToolExecutionContext:
        # Each MCP session is a session of its own: its truncated outputs, scratchpad and
        # shell state are not another client's. Its principal is made here, from the
        # served agent and a drawn id; nothing the client sends goes into it.
        state = _connection_state(ctx)
        base = state.get(_CONTEXT_KEY)
        if not isinstance(base, ToolExecutionContext):
            session_id = "mcp-" + secrets.token_hex(8)
            base = ToolExecutionContext(
                principal=Principal(agent_id=agent_id, session_id=session_id)
            )
            state[_CONTEXT_KEY] = base
        return base

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        del ctx, params
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=info.name,
                    description=info.description,
                    input_schema=dict(info.parameters),
                    annotations=annotations_for(info),
                )
                for info in runtime.registry.listing(agent_id)
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        send, receive = anyio.create_memory_object_stream[ProgressUpdate](PROGRESS_BUFFER)

        def progress(update: ProgressUpdate) -> None:
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                send.send_nowait(update)

        call = ToolCall(params.name, params.arguments or {}, str(ctx.request_id or ""))
        token = _request.set(ctx)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_forward_progress, ctx, receive)
                with send:
                    base = context_of(ctx)
                    result = await runtime.execute_call(call, base.for_call("", progress))
        finally:
            _request.reset(token)
        return to_call_result(result)

    return Server(
        "toolcage", version=toolcage_version(), on_list_tools=list_tools, on_call_tool=call_tool
    )


async def _forward_progress(
    ctx: ServerRequestContext[Any, Any], updates: MemoryObjectReceiveStream[ProgressUpdate]
) -> None:
    step = 0
    async with updates:
        async for update in updates:
            step += 1
            fraction = update.fraction
            if fraction is not None and math.isfinite(fraction):
                await ctx.session.report_progress(fraction, 1.0, update.message)
            else:
                await ctx.session.report_progress(float(step), None, update.message)


def to_call_result(result: ToolResult) -> types.CallToolResult:
    """Content blocks, the envelope as ``structuredContent``, ``isError`` for a failure, the
    display line in ``_meta``."""
    blocks: list[types.ContentBlock] = []
    for block in result.content:
        if isinstance(block, TextContent):
            blocks.append(types.TextContent(text=block.text))
        elif isinstance(block, ImageContent):
            blocks.append(types.ImageContent(data=block.base64(), mime_type=block.mime_type))
    meta = {DISPLAY_META: result.display} if result.display else None
    return types.CallToolResult(
        meta=meta, content=blocks, structured_content=result.envelope(), is_error=result.is_error
    )
