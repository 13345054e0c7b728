"""MCP servers' tools as registry tools, named ``SERVER__TOOL``.

Each tool declares the server's own JSON Schema, so the pipeline validates arguments
against it before the server sees them; hooks, approval, the deadline and truncation
apply as to any other tool. The tier comes from the tool's annotations -- ``readOnlyHint``
gives read_only, anything else side_effecting -- unless the operator lists the tool under
``privileged`` (raised to privileged) or ``hidden`` (never registered).

The registry holds the tools listed when the runtime was built: after a server announces
a new tool list, a tool it dropped is ``not_found``, while tools it added, and changed
schemas, take effect when the runtime is built again.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

from mcp import types
from toolcage.policies import ConfigError, ToolcageConfig

from ._errors import ToolExecutionError, ToolNotFoundError
from ._mcp_client import McpConnection, McpHub, McpServerUnavailable
from ._result import ContentBlock, ImageContent, TextContent, ToolResult
from ._tool import TOOL_NAME, FunctionDecl, SafetyTier, Tool, ToolExecutionContext

_logger = logging.getLogger("toolcage.mcp")


class McpTool:
    """One tool of one MCP server."""

    def __init__(self, hub: McpHub, connection: McpConnection, remote: types.Tool) -> None:
        self._hub = hub
        self._connection = connection
        self.remote_name = remote.name
        """The tool's name on its server."""
        server = connection.server
        self._decl = FunctionDecl(
            name=tool_name(server.name, remote.name),
            description=remote.description or remote.title or remote.name,
            parameters=remote.input_schema,
        )
        read_only = remote.annotations is not None and remote.annotations.read_only_hint
        if remote.name in server.privileged:
            self._tier = SafetyTier.PRIVILEGED
        else:
            self._tier = SafetyTier.READ_ONLY if read_only else SafetyTier.SIDE_EFFECTING

    @property
    def timeout(self) -> float:
        return self._connection.server.timeout

    @property
    def safety_tier(self) -> SafetyTier:
        return self._tier

    @property
    def needs(self) -> tuple[str, ...]:
        server = self._connection.server
        reaches_network = server.url is not None or server.network
        return ("mcp", "network") if reaches_network else ("mcp",)

    def schema(self) -> FunctionDecl:
        return self._decl

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        if self.remote_name not in self._connection.tools:
            raise ToolNotFoundError(
                f"MCP server {self._connection.server.name!r} no longer offers {self.remote_name!r}"
            )
        result = await self._hub.call(self._connection, self.remote_name, dict(args), ctx.progress)
        content = tuple(_content(block) for block in result.content)
        if result.is_error:
            text = "\n".join(block.text for block in content if isinstance(block, TextContent))
            raise ToolExecutionError(text or f"{self.remote_name} failed")
        return ToolResult(content=content, details=result.structured_content)


def tool_name(server: str, tool: str) -> str:
    """``SERVER__TOOL``, the tool's name in snake_case (camelCase and punctuation folded)."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).lower()
    return f"{server}__{re.sub(r'[^a-z0-9]+', '_', words).strip('_')}"


def mcp_builtins(config: ToolcageConfig, stack: AsyncExitStack) -> list[Tool]:
    """Start the configured servers, list their tools, and wrap each; the servers stop
    when ``stack`` closes."""
    if not config.mcp.servers:
        return []
    hub = McpHub(config.mcp.servers, config.base_dir)
    stack.push_async_callback(hub.aclose)
    try:
        hub.start_all()
    except McpServerUnavailable as exc:
        hub.close()
        raise ConfigError(f"mcp.servers: {exc}") from None
    tools: list[Tool] = []
    for connection in hub.connections:
        for remote in connection.tools.values():
            if remote.name in connection.server.hidden:
                continue
            tool = McpTool(hub, connection, remote)
            if TOOL_NAME.fullmatch(tool.schema().name) is None:
                _logger.warning(
                    "MCP tool %r: no valid tool name; left out",
                    remote.name,
                    extra={"event": "mcp.tool_left_out", "remote_tool": remote.name},
                )
                continue
            tools.append(tool)
    return tools


def _content(block: types.ContentBlock) -> ContentBlock:
    if isinstance(block, types.TextContent):
        return TextContent(block.text)
    if isinstance(block, types.ImageContent):
        try:
            return ImageContent(base64.b64decode(block.data), block.mime_type)
        except (binascii.Error, ValueError):
            return TextContent("[an image that was not valid base64]")
    return TextContent(json.dumps(block.model_dump(mode="json", exclude_none=True)))
