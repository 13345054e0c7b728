"""Tools of each tier; serves stdio, or streamable HTTP on 127.0.0.1 with ``--http PORT``."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("basic")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Return the text."""
    return f"echo: {text}"


@server.tool()
def addNumbers(a: int, b: int) -> str:  # MCP tools are often camelCase
    """Add two numbers."""
    return str(a + b)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def wipe() -> str:
    """Pretend to wipe everything."""
    return "wiped"


@server.tool()
def internal() -> str:
    """Operator hides this one."""
    return "internal"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def count(ctx: Context) -> str:
    """Report progress at each step."""
    for step in (1, 2):
        await ctx.report_progress(step, 2, f"step {step}")
    return "counted"


@server.tool()
def fail() -> str:
    """Fail with a message."""
    raise ValueError("the tool failed on purpose")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
