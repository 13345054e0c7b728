"""Results fit the output limit at the tools' documented maxima: whole JSON (UTF-8, not
escapes) under ``truncate_bytes``, read in parts or with shorter texts and a hint the model
can follow, through ``Runtime.from_config`` + ``execute``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

pytestmark = pytest.mark.anyio

EMOJI = "\U0001f600"  # four bytes in UTF-8, twelve as JSON escapes
CONFIG = """
[state]
url = "data/state.db"
chunk_chars = {chunk}

[state.embedder]
kind = "hash"
dimensions = 64
"""
CTX = ToolExecutionContext(user_id="ada", session_id="s1")


def _whole(result: ToolResult, limit: int) -> tuple[Any, list[str]]:
    """The result's JSON and the lines after it, checking that nothing was cut."""
    assert not result.is_error, result.output_text[:300]
    text = result.output_text
    assert len(text.encode()) <= limit
    assert "output truncated" not in text
    assert "\\u" not in text  # UTF-8, not escapes
    first, *rest = text.split("\n")
    return json.loads(first), rest


async def _runtime(root: Path, *, chunk: int = 1000, extra: str = "") -> Runtime:
    (root / "toolcage.toml").write_text(CONFIG.format(chunk=chunk) + extra)
    return Runtime.from_config(root / "toolcage.toml")


@dataclass
class Limited:
    runtime: Runtime
    limit: int
    """The configured output limit, in bytes."""

    async def call(self, tool: str, **args: Any) -> ToolResult:
        return await self.runtime.execute(tool, args, CTX)


@pytest.fixture(params=[16 * 1024, 4096], ids=["default-limit", "4-KiB-limit"])
async def box(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Limited]:
    limit: int = request.param
    extra = "" if limit == 16 * 1024 else f"\n[limits]\ntruncate_bytes = {limit}\n"
    async with await _runtime(tmp_path, extra=extra) as runtime:
        yield Limited(runtime, limit)


class TestScratchpadRead:
    async def test_a_full_pad_of_four_byte_characters_is_read_in_whole_parts(
        self, box: Limited
    ) -> None:
        items = [f"{n:02d}" + EMOJI * 238 for n in range(32)]
        written = await box.call("scratchpad_write", items=items)
        assert not written.is_error, written.output_text
        read: list[str] = []
        offset = 0
        parts = 0
        while True:
            pad, _ = _whole(await box.call("scratchpad_read", offset=offset), box.limit)
            assert pad["item_count"] == 32
            read += pad["items"]
            parts += 1
            if "next_offset" not in pad:
                break
            assert f"offset {pad['next_offset']}" in pad["hint"]
            offset = pad["next_offset"]
        assert read == items
        assert parts >= 2

    async def test_a_pad_that_fits_comes_whole_without_a_hint(self, box: Limited) -> None:
        await box.call("scratchpad_write", items=["a", "b"])
        pad, _ = _whole(await box.call("scratchpad_read"), box.limit)
        assert pad["items"] == ["a", "b"]
        assert "hint" not in pad
        assert "next_offset" not in pad


class TestMemorySearch:
    async def test_twenty_long_hits_fit_with_their_full_length_and_a_hint(
        self, box: Limited
    ) -> None:
        for n in range(20):
            content = f"topic{n} " + EMOJI * 990
            saved = await box.call("memory_save", content=content)
            assert not saved.is_error, saved.output_text
        result = await box.call("memory_search", query="topic", top_k=20)
        hits, lines = _whole(result, box.limit)
        assert 0 < len(hits) <= 20
        if box.limit >= 16 * 1024:  # the default limit holds twenty hits, each cut
            assert len(hits) == 20
        assert len(hits) == 20 or any("lowest-ranked hits were left out" in x for x in lines)
        assert all(hit["full_chars"] > len(hit["text"]) for hit in hits)
        assert all(hit["text"].startswith("topic") and hit["text"].endswith("…") for hit in hits)
        assert any("smaller top_k" in line for line in lines)
        assert result.details is not None
        assert result.details["keyword_only"] is False

    async def test_hits_that_fit_are_whole(self, box: Limited) -> None:
        await box.call("memory_save", content="short tea note")
        result = await box.call("memory_search", query="tea", top_k=20)
        hits, lines = _whole(result, box.limit)
        assert [hit["text"] for hit in hits] == ["short tea note"]
        assert "full_chars" not in hits[0]
        assert lines == []


class TestLongChunks:
    async def test_a_single_hit_longer_than_the_limit_is_cut_to_fit(self, tmp_path: Path) -> None:
        async with await _runtime(tmp_path, chunk=100_000) as runtime:
            content = "needle " + "\u00e9" * 99_000
            await runtime.execute("memory_save", {"content": content}, CTX)
            result = await runtime.execute("memory_search", {"query": "needle"}, CTX)
            [hit], _ = _whole(result, 16 * 1024)
            assert hit["full_chars"] == len(content)
            assert hit["text"].startswith("needle ")
