"""``toolcage mcp``: a ``tools/call`` round trip over stdio beside the same call in-process.

The tool is ``get_current_time`` (a guest, read-only, no files), so both sides pay the same
guest call and the difference is the MCP layer: JSON-RPC framing, the SDK's dispatch, the pipe.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from toolcage.runtime import Runtime

from .stats import ms, summarise

CALLS = 300
ROUNDS = 6
TOOL, ARGUMENTS = "get_current_time", {"timezone": "UTC"}


async def _measure(cwd: Path) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolcage.runtime", "mcp"],
        cwd=cwd,
        env=dict(os.environ),
    )
    over_mcp: list[float] = []
    in_process: list[float] = []
    clock = time.perf_counter
    os.chdir(cwd)
    async with (
        Runtime.from_config(None) as runtime,
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for _ in range(20):  # warm both: module caches, validators
            await session.call_tool(TOOL, ARGUMENTS)
            await runtime.execute(TOOL, ARGUMENTS)
        # Alternating rounds: a machine that gets busier or quieter shifts both alike.
        for _ in range(ROUNDS):
            for _ in range(CALLS // ROUNDS):
                started = clock()
                result = await session.call_tool(TOOL, ARGUMENTS)
                over_mcp.append(clock() - started)
                assert isinstance(result, types.CallToolResult)
                assert not result.is_error, result.content
            for _ in range(CALLS // ROUNDS):
                started = clock()
                local = await runtime.execute(TOOL, ARGUMENTS)
                in_process.append(clock() - started)
                assert not local.is_error, local.envelope()
    return over_mcp, in_process


def run() -> list[str]:
    before = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as scratch:
        (Path(scratch) / "workspace").mkdir()
        try:
            over_mcp, in_process = anyio.run(_measure, Path(scratch))
        finally:
            os.chdir(before)
    m_med, m_p99 = summarise(over_mcp)
    i_med, i_p99 = summarise(in_process)
    return [
        f"{TOOL}, {CALLS} tools/call over stdio: median {ms(m_med)}, p99 {ms(m_p99)}",
        f"the same call in-process (runtime.execute): median {ms(i_med)}, p99 {ms(i_p99)}",
        f"MCP stdio overhead (median difference): {ms(m_med - i_med)}",
    ]
