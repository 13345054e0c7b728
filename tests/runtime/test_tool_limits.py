"""Each policy built once per runtime and handed down: one mount policy for the path check
and the guest tools, one resolved set of limits per tool for the pipeline and the tool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest
from toolcage.policies import (
    LimitsConfig,
    ToolcageConfig,
    ToolLimits,
    ToolLimitsTable,
    ToolOverride,
    load_config,
)
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionError, tool
from toolcage.runtime._deadline import current_deadline
from toolcage.runtime._path_check import PathCheck
from toolcage.runtime.shell import ShellExecTool
from toolcage.runtime.wasm import WasmTool

pytestmark = pytest.mark.anyio

MIB = 1 << 20


@tool(safety_tier=SafetyTier.READ_ONLY, timeout=60)
async def deadline_probe() -> str:
    """Report the seconds of the deadline the pipeline set for this call."""
    deadline = current_deadline()
    return "none" if deadline is None else f"{deadline.seconds:g}"


@tool(safety_tier=SafetyTier.READ_ONLY)
async def loud_failure() -> str:
    """Fail with a long message."""
    raise ToolExecutionError("x" * 5000)


OVERRIDES = """
[tools.file_read]
timeout = 7.5
memory_bytes = 4194304
truncate_bytes = 200

[tools.shell_exec]
output_bytes = 1000

[tools.deadline_probe]
timeout = 4.5

[tools.loud_failure]
truncate_bytes = 300
"""


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    (tmp_path / "toolcage.toml").write_text(OVERRIDES)
    (tmp_path / "workspace").mkdir()
    tools = [deadline_probe, loud_failure]
    async with Runtime.from_config(tmp_path / "toolcage.toml", tools=tools) as runtime:
        yield runtime


def guests(runtime: Runtime) -> list[WasmTool]:
    return [t for t in runtime.registry if isinstance(t, WasmTool)]


class TestOneMountPolicy:
    async def test_the_path_check_and_every_guest_tool_share_one_policy(
        self, runtime: Runtime
    ) -> None:
        (check,) = [c for c in runtime.pipeline.checks if isinstance(c, PathCheck)]
        assert guests(runtime)
        for guest in guests(runtime):
            assert guest.mounts is check.policy, guest.name


class TestOverridesReachEveryLimit:
    async def test_a_guest_runs_under_the_limits_the_pipeline_resolved(
        self, runtime: Runtime
    ) -> None:
        guest = cast(WasmTool, runtime.registry.get("file_read"))
        limits = runtime.pipeline.tool_limits.of("file_read", guest.timeout)
        assert limits == ToolLimits(timeout=7.5, truncate_bytes=200, memory_bytes=4 * MIB)
        assert (guest.limits.timeout, guest.limits.memory_bytes) == (7.5, 4 * MIB)
        (row,) = [r for r in runtime.registry.listing() if r.name == "file_read"]
        assert row.timeout == 7.5

    async def test_the_guest_stops_at_the_overridden_memory_limit(
        self, runtime: Runtime, tmp_path: Path
    ) -> None:
        (tmp_path / "workspace/big.txt").write_text("a" * (6 * MIB))
        result = await runtime.execute("file_read", {"path": "big.txt"})
        assert result.error is not None  # 64 MiB, the default, would hold it
        assert result.error.message == "cannot read: /workspace/big.txt: Out of memory"

    async def test_the_guest_result_is_cut_at_the_overridden_byte_limit(
        self, runtime: Runtime, tmp_path: Path
    ) -> None:
        (tmp_path / "workspace/notes.txt").write_text("b" * 1000)
        result = await runtime.execute("file_read", {"path": "notes.txt"})
        assert result.error is None, result.envelope()
        assert result.output_text.startswith("b" * 200)
        assert "b" * 201 not in result.output_text
        assert "truncated" in result.output_text

    async def test_other_guests_keep_the_defaults(self, runtime: Runtime) -> None:
        guest = cast(WasmTool, runtime.registry.get("file_list"))
        limits = runtime.pipeline.tool_limits.of("file_list", guest.timeout)
        assert limits == ToolLimits(timeout=guest.spec.timeout, truncate_bytes=16 * 1024)
        assert guest.limits.memory_bytes == 64 * MIB

    async def test_the_shell_takes_its_output_cap_from_the_same_limits(
        self, runtime: Runtime
    ) -> None:
        shell = cast(ShellExecTool, runtime.registry.get("shell_exec"))
        assert runtime.pipeline.tool_limits.of("shell_exec", shell.timeout).output_bytes == 1000
        assert shell.output_bytes == 1000

    async def test_a_host_tool_gets_the_overridden_deadline(self, runtime: Runtime) -> None:
        result = await runtime.execute("deadline_probe", {})
        assert result.output_text == "4.5"

    async def test_a_failure_is_cut_at_the_overridden_byte_limit(self, runtime: Runtime) -> None:
        result = await runtime.execute("loud_failure", {})
        assert result.error is not None
        assert result.error.message.startswith("x" * 300)
        assert "x" * 301 not in result.error.message


class TestToolLimitsTable:
    def test_the_override_beats_the_declaration_which_beats_the_defaults(self) -> None:
        table = ToolLimitsTable(
            LimitsConfig(default_timeout=30, truncate_bytes=100),
            {"a": ToolOverride(timeout=2, output_bytes=10), "b": ToolOverride(truncate_bytes=5)},
        )
        assert table.of("a", 9.0) == ToolLimits(timeout=2, truncate_bytes=100, output_bytes=10)
        assert table.of("b", 9.0) == ToolLimits(timeout=9.0, truncate_bytes=5)
        assert table.of("c", None) == ToolLimits(timeout=30, truncate_bytes=100)

    def test_a_tool_is_resolved_once(self) -> None:
        table = ToolLimitsTable.from_config(ToolcageConfig())
        assert table.of("file_read", 10.0) is table.of("file_read", 10.0)

    async def test_names_of_no_tool_leave_nothing_behind(self, tmp_path: Path) -> None:
        config = load_config(None).model_copy(update={"base_dir": tmp_path})
        async with Runtime(config, tools=[deadline_probe]) as runtime:
            for index in range(100):
                result = await runtime.execute(f"ghost_{index}", {})
                assert result.error is not None
            table = runtime.pipeline.tool_limits
            assert table.truncate_bytes("ghost_0") == config.limits.truncate_bytes
            assert table.of("deadline_probe", 60.0) is table.of("deadline_probe", 60.0)
            assert not any(name.startswith("ghost_") for name in table._resolved)
