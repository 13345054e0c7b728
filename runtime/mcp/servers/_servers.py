"""The servers of ``[[mcp.servers]]`` as a source of tools for a runtime.

Built with the runtime (``Runtime.from_config``): every server is started and listed (see
:mod:`._hub`), and the tools of those that started join the built-in tools. A server
that did not start takes only itself down. Its tool names are not known yet, so its prefix
(``SERVER__``) is *withheld* in the registry (:meth:`ToolRegistry.withhold`): a call of one
of its tools is an ``execution_error`` saying why the server is not available and when it
is tried again, ``toolcage tools`` and ``toolcage check`` list it with that reason, the
config may name its tools (agents' lists, ``[tools.NAME]``, approval and rate limits are
checked against the tools of the servers that started), and once a retry starts it, its
tools are added to the registry and the prefix released.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from functools import partial
from typing import TYPE_CHECKING

from toolcage.policies import ConfigError, Redactor, ToolcageConfig

from ..._tool import Tool
from ._client import McpConnection
from ._hub import McpHub
from ._tools import server_tools

if TYPE_CHECKING:
    from ..._host import ToolHost


class McpServers:
    """The configured servers, started; :attr:`tools` holds the tools of those that
    started, and :meth:`attach` hands the others to the runtime's registry."""

    def __init__(self, config: ToolcageConfig, stack: AsyncExitStack, redactor: Redactor) -> None:
        self.hub = McpHub(config.mcp.servers, config.base_dir, redactor)
        stack.push_async_callback(self.hub.aclose)
        self.hub.start_all()
        self.tools: list[Tool] = []
        problems: list[str] = []
        for index, connection in enumerate(self.hub.connections):
            if connection.failure is None:
                try:
                    self.tools += server_tools(index, self.hub, connection)
                except ConfigError as exc:
                    problems.append(str(exc))
        if problems:
            self.hub.close()
            raise ConfigError("; ".join(problems))

    @property
    def withheld(self) -> tuple[str, ...]:
        """The name prefixes (``SERVER__``) of the servers that did not start."""
        return tuple(_prefix(c) for c in self.hub.connections if c.failure is not None)

    def attach(self, runtime: ToolHost) -> None:
        """Withhold the names of the servers that did not start in ``runtime``'s registry,
        and start retrying them; the tools of each that starts are added there."""
        for connection in self.hub.connections:
            if connection.failure is not None:
                why = partial(self.hub.unavailable, connection)
                runtime.registry.withhold(_prefix(connection), why)

        def ready(connection: McpConnection) -> None:
            index = self.hub.connections.index(connection)
            tools = server_tools(index, self.hub, connection)
            for tool in tools:
                runtime.pipeline.gates.check(tool.schema().name, tool)
            runtime.registry.add(tools)
            runtime.registry.release(_prefix(connection))

        self.hub.retry(ready)


def _prefix(connection: McpConnection) -> str:
    return f"{connection.server.name}__"
