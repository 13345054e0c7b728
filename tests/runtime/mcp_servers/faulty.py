"""A server that crashes or hangs on request, and reports its process id."""

from __future__ import annotations

import os
import time
import uuid

from mcp.server.mcpserver import MCPServer

server = MCPServer("faulty")
INSTANCE = uuid.uuid4().hex


@server.tool()
def instance() -> str:
    """A token that differs each time the server starts."""
    return INSTANCE


@server.tool()
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """Exit at once, mid-call."""
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer (blocks the whole server)."""
    while True:
        time.sleep(60)


if __name__ == "__main__":
    server.run()
