"""A runtime served as an MCP server (``toolcage mcp``): :func:`~._server.build_server`
answers ``tools/list`` and ``tools/call`` over a :class:`~toolcage.runtime.abc.ToolHost`
(:mod:`._annotations` says what a tool's tier means to a client), and :mod:`._serve` runs it
on stdio, streamable HTTP, or a Unix socket (:mod:`._socket`). Only the CLI imports this.
"""

from ._serve import serve_http, serve_socket, serve_stdio
from ._server import build_server

__all__ = ["build_server", "serve_http", "serve_socket", "serve_stdio"]
