"""MCP servers' tools as registry tools, named ``SERVER__TOOL``.

Each tool declares the server's own JSON Schema, so the pipeline validates arguments
against it before the server sees them; hooks, approval, the deadline and truncation
apply as to any other tool. The tier comes from the tool's annotations -- ``readOnlyHint``
gives read_only, anything else side_effecting -- unless the operator lists the tool under
``privileged`` (raised to privileged) or ``hidden`` (never registered).

An entry of those lists names a tool by either spelling, the server's own (``deleteNote``)
or the folded one of its toolcage name (``delete_note``), and must name a tool the server
lists when its tools are registered: one that names none is a :class:`ConfigError` naming
its key (for a server that starts only later, its tools are refused with that reason), so
a typo or a renamed tool cannot leave a dangerous tool unguarded.

The registry holds the tools listed when the server first started (when the runtime was
built, or at the retry that started it): after a server announces a new tool list, a tool
it dropped is ``not_found``, while tools it added, and changed schemas, take effect when the
runtime is built again. So the lists are checked against that first listing only: it is
the only one tools are registered from, each with the tier decided then, and an entry
naming a tool the server drops later is no error.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import logging
import re
from collections.abc import Mapping
from typing import Any

from mcp import types
from toolcage.policies import ConfigError, McpServerConfig

from ..._errors import ToolExecutionError, ToolNotFoundError
from ..._result import ContentBlock, ImageContent, TextContent, ToolResult
from ..._tool import TOOL_NAME, FunctionDecl, SafetyTier, Tool, ToolExecutionContext
from ._client import McpConnection
from ._hub import McpHub

_logger = logging.getLogger("toolcage.mcp")


class McpTool:
    """One tool of one MCP server."""

    def __init__(
        self, hub: McpHub, connection: McpConnection, remote: types.Tool, *, privileged: bool
    ) -> None:
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
        if privileged:
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
    """``SERVER__TOOL``, the tool's name in snake_case (see :func:`folded`)."""
    return f"{server}__{folded(tool)}"


def folded(tool: str) -> str:
    """A server's tool name in snake_case: camelCase and punctuation folded."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", tool).lower()
    return re.sub(r"[^a-z0-9]+", "_", words).strip("_")


def server_tools(index: int, hub: McpHub, connection: McpConnection) -> list[Tool]:
    """The tools of the started server ``connection`` (the ``index``-th configured), under
    the operator's ``privileged`` and ``hidden`` lists; :class:`ConfigError` when an entry of
    those names no tool of the server."""
    lists = OperatorLists(index, connection.server, connection.tools)
    if lists.problems:
        raise ConfigError("; ".join(lists.problems))
    tools: list[Tool] = []
    for remote in connection.tools.values():
        if remote.name in lists.hidden:
            continue
        tool = McpTool(hub, connection, remote, privileged=remote.name in lists.privileged)
        if TOOL_NAME.fullmatch(tool.schema().name) is None:
            _logger.warning(
                "MCP tool %r: no valid tool name; left out",
                remote.name,
                extra={"event": "mcp.tool_left_out", "remote_tool": remote.name},
            )
            continue
        tools.append(tool)
    return tools


class OperatorLists:
    """A server's ``privileged`` and ``hidden`` entries resolved to its own tool names.

    Each entry matches the tools whose own name or folded name it is (two tools whose names
    fold alike are both matched: the operator's intent is kept whichever the server means).
    """

    SHOWN = 20
    """Tool names an error lists at most."""

    def __init__(self, index: int, server: McpServerConfig, tools: Mapping[str, object]) -> None:
        self._where = f"mcp.servers.{index}"
        self._server = server.name
        self._by_name: dict[str, set[str]] = {}
        for name in tools:
            self._by_name.setdefault(name, set()).add(name)
            self._by_name.setdefault(folded(name), set()).add(name)
        self.problems: list[str] = []
        """One line per entry that names no tool, with its key path."""
        self.privileged = self._resolve("privileged", server.privileged)
        """The server's names of the tools raised to privileged."""
        self.hidden = self._resolve("hidden", server.hidden)
        """The server's names of the tools left out."""

    def _resolve(self, key: str, entries: tuple[str, ...]) -> frozenset[str]:
        chosen: set[str] = set()
        for position, entry in enumerate(entries):
            matched = self._by_name.get(entry)
            if matched is None:
                self.problems.append(
                    f"{self._where}.{key}.{position}: no tool {entry!r} on server "
                    f"{self._server!r}{self._hint(entry)}"
                )
            else:
                chosen |= matched
        return frozenset(chosen)

    def _hint(self, entry: str) -> str:
        names = sorted({name for names in self._by_name.values() for name in names})
        if not names:
            return " (it lists no tools)"
        close = difflib.get_close_matches(entry, list(self._by_name), n=1)
        maybe = f"did you mean {close[0]!r}? " if close else ""
        shown = ", ".join(name[:64] for name in names[: self.SHOWN])
        more = f" and {len(names) - self.SHOWN} more" if len(names) > self.SHOWN else ""
        return f" ({maybe}its tools: {shown}{more})"


def _content(block: types.ContentBlock) -> ContentBlock:
    if isinstance(block, types.TextContent):
        return TextContent(block.text)
    if isinstance(block, types.ImageContent):
        try:
            return ImageContent(base64.b64decode(block.data), block.mime_type)
        except (binascii.Error, ValueError):
            return TextContent("[an image that was not valid base64]")
    return TextContent(json.dumps(block.model_dump(mode="json", exclude_none=True)))
