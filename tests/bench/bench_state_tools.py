"""The state tools through ``Runtime.execute``: memory, scratchpad and schedules on the
embedded store, each call a fresh guest instance that relays one host call."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from toolcage.runtime import Runtime, ToolExecutionContext

from .stats import summarise, us

CONFIG = """
[state]
url = "data/state.db"

[state.embedder]
kind = "hash"
dimensions = 64
"""
CALLS = 300
DAILY = {"goal": "Summarise my inbox.", "cadence_type": "cron", "cadence_value": "0 9 * * *"}
ORDER: list[tuple[str, dict[str, Any]]] = [
    ("scratchpad_write", {"items": ["read the plan", "then write"]}),
    ("scratchpad_read", {}),
    ("memory_save", {"content": "the office moved to the third floor", "tags": ["office"]}),
    ("memory_search", {"query": "office floor"}),
    ("schedule_search", {}),
]


async def _measure(root: Path) -> dict[str, list[float]]:
    (root / "toolcage.toml").write_text(CONFIG)
    context = ToolExecutionContext(user_id="ada", session_id="s1")
    times: dict[str, list[float]] = {name: [] for name, _ in ORDER}
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        for _ in range(5):
            await runtime.execute("schedule_create", DAILY, context)
        for _ in range(20):  # warm: modules compiled, store open, pages cached
            for name, args in ORDER:
                await runtime.execute(name, args, context)
        for _ in range(CALLS):
            for name, args in ORDER:
                started = time.perf_counter()
                result = await runtime.execute(name, args, context)
                times[name].append(time.perf_counter() - started)
                assert not result.is_error, result.output_text
    return times


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        times = anyio.run(_measure, Path(tmp))
    lines = []
    for name, samples in times.items():
        median, p99 = summarise(samples)
        lines.append(f"{name:<17} through Runtime.execute: median {us(median)}, p99 {us(p99)}")
    return lines
