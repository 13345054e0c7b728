"""A runtime whose file tools see one temporary workspace, read-write for side effects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from toolcage.runtime import Runtime, ToolResult
from toolcage.wasm_tools.build import build_all

CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }

[[mounts.areas]]
host = "docs"
guest = "/docs"
tiers = { read_only = "ro", side_effecting = "ro" }

[[mounts.areas]]
host = "shared"
guest = "/shared"
tiers = { read_only = "ro", side_effecting = "rw" }
"""


@dataclass
class Sandbox:
    runtime: Runtime
    ws: Path
    docs: Path
    shared: Path

    async def call(self, tool: str, **args: object) -> ToolResult:
        return await self.runtime.execute(tool, args)

    async def ok(self, tool: str, **args: object) -> str:
        result = await self.call(tool, **args)
        assert not result.is_error, result.output_text
        return result.output_text

    async def fails(self, tool: str, error_type: str, **args: object) -> str:
        result = await self.call(tool, **args)
        assert result.is_error, result.output_text
        assert result.error is not None
        assert result.error.kind.value == error_type, result.error.message
        return result.error.message


@pytest.fixture(scope="session", autouse=True)
def built_modules() -> None:
    """The guest modules, (re)built when stale -- what `make wasm` does."""
    build_all()


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    for name in ("ws", "docs", "shared"):
        (tmp_path / name).mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
        yield Sandbox(runtime, tmp_path / "ws", tmp_path / "docs", tmp_path / "shared")
