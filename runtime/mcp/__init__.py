"""MCP both ways.

:mod:`.servers` turns the configured ``[[mcp.servers]]`` into tools: a tool kind, like
:mod:`toolcage.runtime.wasm`, that the runtime's assembly loads; it imports the core only.
:mod:`.serve` serves a runtime to MCP clients (``[mcp.serve]``, ``toolcage mcp``): an
adapter over the runtime that reaches it through :class:`~toolcage.runtime.abc.ToolHost`;
only the CLI imports it.

This package imports neither, so consuming servers never loads the serving side (uvicorn).
Every ``import mcp`` below it is absolute and means the MCP SDK.
"""
