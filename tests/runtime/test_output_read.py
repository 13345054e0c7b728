"""A truncated output stays readable, in full, through the runtime users build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, tool

pytestmark = pytest.mark.anyio

TEXT = "".join(f"row {n:05d}: ünïcödé ✓ {'x' * (n % 37)}\n" for n in range(3000))


@tool(safety_tier=SafetyTier.READ_ONLY)
def report() -> str:
    """A long report."""
    return TEXT


def handle_of(text: str) -> str:
    match = re.search(r'handle "([^"]+)"', text)
    assert match is not None, text[-300:]
    return match.group(1)


async def read_all(runtime: Runtime, handle: str, ctx: ToolExecutionContext) -> str:
    pages: list[str] = []
    offset = 0
    while True:
        page = await runtime.execute(
            "tool_output_read", {"handle": handle, "offset": offset, "max_bytes": 4096}, ctx
        )
        assert not page.is_error, page.envelope()
        pages.append(page.output_text)
        offset = page.details["next_offset"]
        if page.details["eof"]:
            return "".join(pages)


class TestTruncatedOutputThroughFromConfig:
    async def test_the_handle_in_the_marker_reads_back_the_whole_output(
        self, tmp_path: Path
    ) -> None:
        config = tmp_path / "toolcage.toml"
        config.write_text("[limits]\ntruncate_bytes = 4096\n")
        ctx = ToolExecutionContext(session_id="s1")
        async with Runtime.from_config(config, tools=[report]) as runtime:
            shown = await runtime.execute("report", {}, ctx)
            assert len(shown.output_text.encode()) < len(TEXT.encode())
            assert await read_all(runtime, handle_of(shown.output_text), ctx) == TEXT

    async def test_with_the_default_config_too(self) -> None:
        async with Runtime.from_config(None, tools=[report]) as runtime:
            shown = await runtime.execute("report", {})
            handle = handle_of(shown.output_text)
            assert await read_all(runtime, handle, ToolExecutionContext()) == TEXT
            other_session = await runtime.execute(
                "tool_output_read", {"handle": handle}, ToolExecutionContext(session_id="s2")
            )
            assert other_session.error is not None
            assert other_session.error.kind.value == "not_found"
