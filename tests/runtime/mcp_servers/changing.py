"""A server whose tool list changes, announced with notifications/tools/list_changed."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


@server.tool()
def old() -> str:
    """A tool that is retired."""
    return "old"


@server.tool()
async def retire(ctx: Context) -> str:
    """Remove ``old`` and announce the change."""
    server.remove_tool("old")
    await ctx.session.send_tool_list_changed()
    return "retired"


if __name__ == "__main__":
    server.run()
