"""Ten thousand mixed calls at once: every call gets exactly its own result, nothing is lost."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.runtime import (
    Runtime,
    SafetyTier,
    ToolEvent,
    ToolExecutionEnd,
    ToolExecutionStart,
    tool,
)

pytestmark = pytest.mark.anyio

CALLS = 10_000


@tool(safety_tier=SafetyTier.READ_ONLY)
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(safety_tier=SafetyTier.READ_ONLY)
def count_words(text: str) -> int:
    """Count the words of a text (in a worker thread)."""
    return len(text.split())


RELEASE = threading.Event()
"""Set when the run is over: until then ``slow`` cannot finish, however the machine is loaded."""


@tool(safety_tier=SafetyTier.READ_ONLY, timeout=0.05)
def slow() -> str:
    """Overrun the timeout."""
    RELEASE.wait()
    return "late"


def mix(index: int) -> tuple[str, dict[str, Any], str, str]:
    """Call ``index`` of the mix: tool, arguments, expected status or error_type, result."""
    n = index % 20
    if n < 8:
        return "add", {"a": index, "b": 1}, "success", str(index + 1)
    if n < 11:
        return "count_words", {"text": "a b " * (index % 7)}, "success", str(2 * (index % 7))
    if n < 14:
        path = f"/workspace/read/f{index % 5}.txt"
        return "file_read", {"path": path}, "success", f"file {index % 5}"
    if n < 15:
        path = f"/workspace/w{index % 3}.txt"
        return "file_write", {"path": path, "content": "x"}, "success", ""
    if n < 16:
        return "file_list", {"path": "/workspace/read"}, "success", "f4.txt"
    if n < 17:
        return "add", {"a": "one"}, "validation_error", ""
    if n < 18:
        return "no_such_tool", {}, "not_found", ""
    if n < 19:
        return "file_read", {"path": "/etc/passwd"}, "permission_denied", ""
    if index % 100 == 19:
        return "slow", {}, "timeout", ""
    return "add", {"a": 1, "b": 1}, "success", "2"


@pytest.mark.parametrize("concurrency", [16, 64])
async def test_ten_thousand_mixed_calls_drop_nothing(tmp_path: Path, concurrency: int) -> None:
    (tmp_path / "workspace" / "read").mkdir(parents=True)
    for i in range(5):
        (tmp_path / "workspace" / "read" / f"f{i}.txt").write_text(f"file {i}")
    config = tmp_path / "toolcage.toml"
    config.write_text(
        '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\n'
        'tiers = { read_only = "ro", side_effecting = "rw" }\n'
    )
    outcomes: dict[int, dict[str, Any]] = {}
    events: Counter[type] = Counter()
    calls = iter(range(CALLS))

    RELEASE.clear()
    async with Runtime.from_config(config, tools=[add, count_words, slow]) as runtime:

        def count(event: ToolEvent) -> None:
            events[type(event)] += 1

        runtime.hooks.on_event(count)

        async def worker() -> None:
            for index in calls:
                name, arguments, _, _ = mix(index)
                result = await runtime.execute(name, arguments)
                assert index not in outcomes
                outcomes[index] = result.envelope()

        try:
            async with anyio.create_task_group() as tg:
                for _ in range(concurrency):
                    tg.start_soon(worker)
        finally:
            RELEASE.set()

    assert len(outcomes) == CALLS
    assert events[ToolExecutionStart] == events[ToolExecutionEnd] == CALLS
    kinds: Counter[str] = Counter()
    for index, envelope in outcomes.items():
        name, _, expected, text = mix(index)
        got = envelope.get("error_type", envelope["status"])
        kinds[got] += 1
        assert got == expected, (index, envelope)
        if name.startswith("file_"):
            assert text in envelope.get("result", ""), (index, envelope)
        elif text:
            assert envelope["result"] == text, (index, envelope)
    assert set(kinds) == {
        "success",
        "validation_error",
        "not_found",
        "permission_denied",
        "timeout",
    }
