"""A server whose tool list goes wrong: ``endless`` pages (each with a ``nextCursor``),
``many`` tools, or one ``wide`` declaration of 5 MiB -- from the ``start``, or ``later``,
once its ``go`` tool has announced a change (notifications/tools/list_changed).

Usage: ``listing.py MODE WHEN [COUNTER]``; each ``tools/list`` request appends a byte to
the file COUNTER, so a test can see how many were asked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

MODE, WHEN = sys.argv[1], sys.argv[2]
COUNTER = Path(sys.argv[3]) if len(sys.argv) > 3 else None
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}
PLAIN = [
    types.Tool(name="echo", description="Return the text.", input_schema=SCHEMA),
    types.Tool(name="go", description="Go wrong from now on.", input_schema={"type": "object"}),
]
state = {"wrong": WHEN == "start"}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if COUNTER is not None:
        with COUNTER.open("ab") as file:
            file.write(b".")
    if not state["wrong"]:
        return types.ListToolsResult(tools=PLAIN)
    if MODE == "endless":
        page = int(params.cursor) if params is not None and params.cursor else 0
        tool = types.Tool(name=f"page_{page}", input_schema=SCHEMA)
        return types.ListToolsResult(tools=[*PLAIN, tool], next_cursor=str(page + 1))
    if MODE == "many":
        tools = [types.Tool(name=f"tool_{i}", input_schema=SCHEMA) for i in range(1000)]
        return types.ListToolsResult(tools=[*PLAIN, *tools])
    wide = {"type": "object", "description": "x" * (5 * 1024 * 1024)}
    return types.ListToolsResult(tools=[*PLAIN, types.Tool(name="wide", input_schema=wide)])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "go":
        state["wrong"] = True
        await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(type="text", text="gone wrong")])
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("listing", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
