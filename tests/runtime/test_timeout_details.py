"""A ``timeout`` error says how long the call ran and what its limit was, for every kind of
tool: an async host tool, a synchronous one in a thread, a shell command."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import ToolcageConfig
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, SafetyTier, tool

from ..sidecar.conftest import make_workspace

pytestmark = pytest.mark.anyio

released = threading.Event()


@tool(safety_tier=SafetyTier.READ_ONLY, timeout=0.25)
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "unreachable"


@tool(safety_tier=SafetyTier.READ_ONLY, timeout=60)
def block() -> str:
    """Block a thread until the test releases it."""
    released.wait()
    return "released"


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "toolcage.toml").write_text("[tools.block]\ntimeout = 0.5\n")
    async with Runtime.from_config(tmp_path / "toolcage.toml", tools=[hang, block]) as runtime:
        yield runtime


def timing(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["error_type"] == "timeout", envelope
    details: dict[str, Any] = envelope["details"]
    assert details["retryable"] is True
    return details


class TestHostTools:
    async def test_an_async_tool_reports_elapsed_and_limit(self, runtime: Runtime) -> None:
        details = timing((await runtime.execute("hang", {})).envelope())
        assert details["timeout"] == 0.25
        assert details["elapsed"] >= 0.25

    async def test_a_thread_tool_reports_the_configured_limit(self, runtime: Runtime) -> None:
        try:
            details = timing((await runtime.execute("block", {})).envelope())
        finally:
            released.set()
        assert details["timeout"] == 0.5
        assert details["elapsed"] >= 0.5


def shell_config(workspace: Path) -> ToolcageConfig:
    return parse_config(
        {"shell": {"workspace": str(workspace)}, "approval": {"auto_approve": ["shell_exec"]}},
        base_dir=workspace.parent,
    )


class TestShell:
    async def test_a_command_timeout_reports_the_command_limit(self) -> None:
        async with Runtime.from_config(shell_config(make_workspace())) as runtime:
            result = await runtime.execute(
                "shell_exec", {"command": "echo partial && sleep 1000", "timeout": 1}
            )
        details = timing(result.envelope())
        assert details["timeout"] == 1
        assert details["elapsed"] > 0
        assert "partial" in result.output_text
