"""A runtime whose file tools see one temporary workspace, read-write for side effects."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult
from toolcage.runtime.abc import Tool
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


class Plant:
    """A security check after the path check: changes the tree once the path was checked
    (append it to ``runtime.pipeline.checks``)."""

    def __init__(self, action: Callable[[], None]) -> None:
        self.action = action

    def check(
        self, tool: Tool, args: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> Mapping[str, Any]:
        del tool, ctx
        self.action()
        return args


@pytest.fixture(scope="session", autouse=True)
def built_modules() -> None:
    """The guest modules, (re)built when stale (the session's start has built them)."""
    build_all()


@asynccontextmanager
async def sandbox_at(root: Path, extra: str = "") -> AsyncIterator[Sandbox]:
    """The sandbox in ``root``, its config followed by the TOML text ``extra``."""
    for name in ("ws", "docs", "shared"):
        (root / name).mkdir(exist_ok=True)
    (root / "toolcage.toml").write_text(CONFIG + extra)
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        yield Sandbox(runtime, root / "ws", root / "docs", root / "shared")


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async with sandbox_at(tmp_path) as box:
        yield box
