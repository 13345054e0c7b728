"""What a rate limit adds to a call: a no-op host tool with and without a limit on it.

Three runtimes in alternating rounds: no ``[rate_limits]`` at all, limits that do not name
the tool (one lookup), and a limit on the tool, counted in the embedded state store (one
statement per call, on the event loop's thread).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio
from toolcage.runtime import Runtime, SafetyTier, tool

from .stats import summarise, us

CALLS = 6_000
ROUNDS = 10

NO_LIMITS = ""
OTHER_TOOLS = """
[rate_limits.others]
tools = ["side_effecting"]
calls = 1000000000
window = 1
"""
LIMITED = """
[rate_limits.bench]
tools = ["noop"]
per = ["user"]
calls = 1000000000
window = 1
"""


@tool(safety_tier=SafetyTier.READ_ONLY)
async def noop(value: int = 0) -> str:
    """Do nothing.

    Args:
        value: Ignored.
    """
    return ""


def _runtime(directory: Path, name: str, text: str) -> Runtime:
    home = directory / name
    (home / "workspace").mkdir(parents=True)
    (home / "toolcage.toml").write_text(text)
    return Runtime.from_config(home / "toolcage.toml", tools=[noop])


async def _measure(directory: Path) -> dict[str, list[float]]:
    runtimes = {
        "no limits": _runtime(directory, "none", NO_LIMITS),
        "limits on other tools": _runtime(directory, "others", OTHER_TOOLS),
        "a limit on the tool": _runtime(directory, "limited", LIMITED),
    }
    samples: dict[str, list[float]] = {name: [] for name in runtimes}
    args = {"value": 1}
    clock = time.perf_counter
    try:
        for runtime in runtimes.values():
            for _ in range(500):  # warm caches, the validator and the store
                await runtime.execute("noop", args)
        # Alternating rounds: a machine that gets busier or quieter meanwhile shifts all alike.
        for _ in range(ROUNDS):
            for name, runtime in runtimes.items():
                found = samples[name]
                for _ in range(CALLS // ROUNDS):
                    started = clock()
                    result = await runtime.execute("noop", args)
                    found.append(clock() - started)
                    assert not result.is_error, result.envelope()
    finally:
        for runtime in runtimes.values():
            await runtime.aclose()
    return samples


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="toolcage-bench-") as directory:
        samples = anyio.run(_measure, Path(directory))
    medians = {name: summarise(found) for name, found in samples.items()}
    base = medians["no limits"][0]
    lines = [
        f"no-op host tool, {CALLS:,} calls, {name}: median {us(med)}, p99 {us(p99)}"
        for name, (med, p99) in medians.items()
    ]
    lines.append(
        "added by limits on other tools (median difference): "
        f"{us(medians['limits on other tools'][0] - base)}"
    )
    lines.append(
        "added by a limit on the tool, embedded store (median difference): "
        f"{us(medians['a limit on the tool'][0] - base)}"
    )
    return lines
