"""The bounds on what a configured MCP server says, and what passing one costs it.

The kernel holds a stdio server's processes to their rlimits (:mod:`._sandbox`). What
a server *says* ends up in the runtime's own memory, so it is bounded as it arrives:

``message_bytes``
    one message, a line on stdio, checked as it is read (:mod:`._stdio`): a longer
    one is never held whole;
``list_pages``
    the pages of one ``tools/list``: a server that answers every page with a
    ``nextCursor`` would otherwise be listed for ever;
``listed_tools`` and ``schema_bytes``
    the tools a server has declared since it started, by name, and the JSON of their
    latest declarations together -- what the runtime and the SDK's session keep of them
    (the session adds each page's tools to its cache and forgets only on a one-page
    listing), so a server that lists new tools at every ``list_changed`` also ends.

A server past one of these is hostile or broken, and would be again if restarted: it is
stopped and *disabled* -- every call of its tools fails with ``execution_error`` naming the
bound -- until the runtime is built again. A server the kernel kills (CPU seconds used up)
is not disabled: it starts again at the next call, with fresh budgets.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp import types
from toolcage.policies import McpServerConfig

from ..._errors import ToolExecutionError


class McpLimitExceeded(Exception):
    """A server went past one of its bounds."""

    def __init__(self, server: str, key: str, allowed: int, actual: int, what: str) -> None:
        super().__init__(f"{what} ({key} = {allowed})")
        self.server = server
        self.key = key
        """The config key of the bound."""
        self.allowed = allowed
        self.actual = actual
        """How far the server went (for a message: the bytes read before it was cut)."""

    def error(self) -> ToolExecutionError:
        """The error every call of the disabled server's tools gets."""
        return ToolExecutionError(
            f"MCP server {self.server!r} is disabled until the runtime is built again: {self}",
            details={
                "server": self.server,
                "limit": self.key,
                "allowed": self.allowed,
                "actual": self.actual,
            },
        )


def message_too_large(server: McpServerConfig, read: int) -> McpLimitExceeded:
    """The bound ``server`` passed with a message of which ``read`` bytes had arrived."""
    limit = server.message_bytes
    return McpLimitExceeded(
        server.name, "message_bytes", limit, read, f"it sent a message of more than {limit} bytes"
    )


class ListingBounds:
    """Counts one server session's tool listings against its bounds.

    Make one per session; call :meth:`begin` before each listing, :meth:`next_page` before
    asking for each page after the first, and :meth:`add` with each page's tools.
    """

    def __init__(self, server: McpServerConfig) -> None:
        self._server = server
        self._sizes: dict[str, int] = {}
        """JSON bytes of each name's latest declaration."""
        self._bytes = 0
        self._pages = 0
        self._entries = 0

    def begin(self) -> None:
        self._pages = 1
        self._entries = 0

    def next_page(self) -> None:
        server = self._server
        if self._pages >= server.list_pages:
            raise McpLimitExceeded(
                server.name,
                "list_pages",
                server.list_pages,
                self._pages + 1,
                f"its tool list went on past {server.list_pages} pages",
            )
        self._pages += 1

    def add(self, tools: Sequence[types.Tool]) -> None:
        server = self._server
        self._entries += len(tools)
        for tool in tools:
            size = len(tool.model_dump_json(by_alias=True, exclude_none=True))
            self._bytes += size - self._sizes.get(tool.name, 0)
            self._sizes[tool.name] = size
        declared = max(self._entries, len(self._sizes))
        if declared > server.listed_tools:
            raise McpLimitExceeded(
                server.name,
                "listed_tools",
                server.listed_tools,
                declared,
                f"it declared {declared} tools, more than {server.listed_tools}",
            )
        if self._bytes > server.schema_bytes:
            raise McpLimitExceeded(
                server.name,
                "schema_bytes",
                server.schema_bytes,
                self._bytes,
                f"its tools' declarations came to {self._bytes} bytes of JSON, "
                f"more than {server.schema_bytes}",
            )
