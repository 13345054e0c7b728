"""A server whose tool list goes wrong: ``endless`` pages (each with a ``nextCursor``),
``many`` tools, one ``wide`` declaration of 5 MiB, ``growing`` by 100 new names at each
listing, or a ``storm`` of 50 announcements answered by slow listings -- from the ``start``,
or ``later``, once its ``go`` tool has announced a change (notifications/tools/list_changed;
each call of ``go`` announces one). ``most_at_once`` says how many listings it has had to
answer at the same time.

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
    types.Tool(name="most_at_once", input_schema={"type": "object"}),
]
state = {"wrong": WHEN == "start", "listings": 0, "answering": 0, "most_at_once": 0}


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if COUNTER is not None:
        with COUNTER.open("ab") as file:
            file.write(b".")
    if not state["wrong"]:
        return types.ListToolsResult(tools=PLAIN)
    state["listings"] += 1
    if MODE == "storm":
        state["answering"] += 1
        state["most_at_once"] = max(state["most_at_once"], state["answering"])
        await anyio.sleep(0.2)
        state["answering"] -= 1
        return types.ListToolsResult(tools=PLAIN)
    if MODE == "endless":
        page = int(params.cursor) if params is not None and params.cursor else 0
        tool = types.Tool(name=f"page_{page}", input_schema=SCHEMA)
        return types.ListToolsResult(tools=[*PLAIN, tool], next_cursor=str(page + 1))
    if MODE == "growing":
        listing = state["listings"]
        tools = [types.Tool(name=f"tool_{listing}_{i}", input_schema=SCHEMA) for i in range(100)]
        return types.ListToolsResult(tools=[*PLAIN, *tools])
    if MODE == "many":
        tools = [types.Tool(name=f"tool_{i}", input_schema=SCHEMA) for i in range(1000)]
        return types.ListToolsResult(tools=[*PLAIN, *tools])
    wide = {"type": "object", "description": "x" * (5 * 1024 * 1024)}
    return types.ListToolsResult(tools=[*PLAIN, types.Tool(name="wide", input_schema=wide)])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "go":
        state["wrong"] = True
        for _ in range(50 if MODE == "storm" else 1):
            await ctx.session.send_tool_list_changed()
        return types.CallToolResult(content=[types.TextContent(type="text", text="gone wrong")])
    if params.name == "most_at_once":
        text = str(state["most_at_once"])
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    text = str((params.arguments or {}).get("text", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("listing", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
