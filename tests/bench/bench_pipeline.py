"""The pipeline's own overhead: a no-op host tool through ``Runtime.execute`` beside the bare
call of the same tool (its reference), and one that returns a few kilobytes of text (JSON
and Markdown, brackets and all), which the pipeline reads once for lines that could pass for
its own."""

from __future__ import annotations

import time

import anyio
from toolcage.runtime import Runtime, SafetyTier, tool

from .stats import summarise, us

CALLS = 10_000
ROUNDS = 10
TARGET = 15e-6
"""Most median overhead a no-op host tool's call may have, in seconds."""


@tool(safety_tier=SafetyTier.READ_ONLY)
async def noop(value: int = 0) -> str:
    """Do nothing.

    Args:
        value: Ignored.
    """
    return ""


TEXT = (
    '{"items": [{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": []}], "next": null}\n' * 30
    + "## Section\n\nSome [linked](https://example.com/) text, `code[i]` and more.\n" * 30
)
"""About 4 KB of tool output."""


@tool(safety_tier=SafetyTier.READ_ONLY)
async def text(value: int = 0) -> str:
    """Return some text.

    Args:
        value: Ignored.
    """
    return TEXT


async def _measure(name: str = "noop") -> tuple[list[float], list[float]]:
    runtime = Runtime(tools=[noop, text])
    direct_tool = noop if name == "noop" else text
    args = {"value": 1}
    for _ in range(500):  # warm caches and the validator
        await runtime.execute(name, args)
    ctx = __import__("toolcage.runtime", fromlist=["x"]).ToolExecutionContext()
    pipeline: list[float] = []
    direct: list[float] = []
    clock = time.perf_counter
    # Alternating rounds: a machine that gets busier or quieter meanwhile shifts both alike.
    for _ in range(ROUNDS):
        for _ in range(CALLS // ROUNDS):
            started = clock()
            result = await runtime.execute(name, args)
            pipeline.append(clock() - started)
            assert not result.is_error, result.envelope()
        for _ in range(CALLS // ROUNDS):
            started = clock()
            await direct_tool.execute(args, ctx)
            direct.append(clock() - started)
    return pipeline, direct


def run() -> list[str]:
    pipeline, direct = anyio.run(_measure)
    p_med, p_p99 = summarise(pipeline)
    d_med, d_p99 = summarise(direct)
    t_pipeline, t_direct = anyio.run(_measure, "text")
    t_med = summarise(t_pipeline)[0] - summarise(t_direct)[0]
    overhead = p_med - d_med
    verdict = "met" if overhead <= TARGET else "not met"
    return [
        f"no-op host tool, {CALLS:,} calls through Runtime.execute: "
        f"median {us(p_med)}, p99 {us(p_p99)}",
        f"reference, the same tool's execute() called directly: median {us(d_med)}, "
        f"p99 {us(d_p99)}",
        f"pipeline overhead (median difference): {us(overhead)} "
        f"(target: <= {us(TARGET)}): {verdict}",
        f"pipeline overhead for a tool returning {len(TEXT):,} characters of text: {us(t_med)}",
    ]
