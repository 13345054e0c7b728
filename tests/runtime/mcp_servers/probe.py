"""Tries to read files and to open connections, and says what happened."""

from __future__ import annotations

import socket

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe")


@server.tool()
def read(path: str) -> str:
    """Read a file."""
    try:
        with open(path, encoding="utf-8") as file:
            return f"read: {file.read()}"
    except OSError as exc:
        return f"refused: {type(exc).__name__}"


@server.tool()
def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "connected"
    except OSError as exc:
        return f"refused: {type(exc).__name__}"


if __name__ == "__main__":
    server.run()
