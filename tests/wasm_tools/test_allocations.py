"""The guests' allocator (``sdk/toolcage_alloc.c``), through an operator's guest.

Every byte a block was given stays its own across frees, reuses and reallocations; libc's
own allocations go through it too; a guest's ordinary allocations fit in its initial memory,
so a call grows no memory (each grow costs wasmtime an ``mprotect``, and the next instance
in that pool slot a TLB flush on every CPU); a large one grows it, and one past the memory
limit is refused as ``NULL``, not a trap.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolcage.runtime import Runtime
from toolcage.wasm_tools.build import build_tool

pytestmark = pytest.mark.anyio


@pytest.fixture
def config(tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    build_tool(Path(__file__).parent / "sdk_guests" / "allocations.c", tools)
    declaration = {
        "name": "allocations",
        "description": "Allocate, check and free blocks of every size.",
        "parameters": {"type": "object", "properties": {"large": {"type": "boolean"}}},
        "safety_tier": "read_only",
        "timeout": 30,
    }
    (tools / "allocations.json").write_text(json.dumps(declaration))
    (tmp_path / "toolcage.toml").write_text('[guest_tools]\ndirs = ["tools"]\n')
    return tmp_path / "toolcage.toml"


class TestGuestAllocator:
    async def test_small_blocks_stay_intact_and_grow_no_memory(self, config: Path) -> None:
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute("allocations", {})
        assert not result.is_error, result.output_text
        assert result.details is not None
        assert result.details["pages_after_small"] == result.details["pages"]

    async def test_large_blocks_grow_the_memory_until_its_limit(self, config: Path) -> None:
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute("allocations", {"large": True})
            again = await runtime.execute("allocations", {"large": True})
        assert not result.is_error, result.output_text
        assert result.details is not None
        assert result.details["pages_after_large"] > result.details["pages_after_small"]
        assert again.details == result.details  # a fresh instance: the same memory again
