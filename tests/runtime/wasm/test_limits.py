"""The runner's limits with hostile guests: time, memory, output, cancellation, parallelism."""

from __future__ import annotations

import re
import resource
import time
from pathlib import Path

import anyio
import pytest
from toolcage.runtime import Runtime, ToolExecutionError, ToolTimeoutError
from toolcage.runtime.wasm import GuestLimits, WasmToolRunner

from .guest_tools import add_guest

pytestmark = pytest.mark.anyio


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class TestTimeout:
    async def test_infinite_loop_is_stopped_at_its_timeout(self, runner: WasmToolRunner) -> None:
        start = time.monotonic()
        with pytest.raises(ToolTimeoutError, match=r"timed out after 0\.3 s"):
            await runner.run("spin", b"", (), GuestLimits(timeout=0.3))
        assert time.monotonic() - start >= 0.3

    async def test_next_call_is_unharmed(self, runner: WasmToolRunner) -> None:
        with pytest.raises(ToolTimeoutError):
            await runner.run("spin", b"", (), GuestLimits(timeout=0.05))
        result = await runner.run("nap", b"", (), GuestLimits(timeout=5))
        assert result.output_text == "rested"


class TestMemoryLimit:
    async def test_unbounded_allocation_stops_at_the_limit(self, runner: WasmToolRunner) -> None:
        with pytest.raises(ToolExecutionError, match=r"memory limit \(16 MiB\)"):
            await runner.run("hog", b"", (), GuestLimits(timeout=10, memory_bytes=16 << 20))


class TestOutputCap:
    async def test_100_mb_of_output_is_truncated_without_host_growth(
        self, runner: WasmToolRunner
    ) -> None:
        await runner.run("nap", b"", (), GuestLimits(timeout=5))  # warm up threads and caches
        before = rss_bytes()
        result = await runner.run("flood", b"", (), GuestLimits(timeout=30, output_bytes=1 << 16))
        grown = rss_bytes() - before
        text = result.output_text
        assert text.startswith("x" * 1000)
        assert text.endswith(
            "\n[output truncated — original size: 104,857,600 bytes]"
            "\n[shown: the first 65,536 bytes]"
        )
        assert grown < 20 << 20, f"host RSS grew by {grown / 2**20:.1f} MiB"
        again = await runner.run("nap", b"", (), GuestLimits(timeout=5))
        assert again.output_text == "rested"

    async def test_a_flooding_tool_is_marked_at_its_cap_and_at_the_result_limit(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        (tmp_path / "workspace").mkdir()
        config = tmp_path / "toolcage.toml"
        config.write_text(
            '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\n'
            'tiers = { read_only = "ro", side_effecting = "rw" }\n'
        )
        async with Runtime.from_config(config) as runtime:
            add_guest(runtime, "flood", guest_wasm["flood"])
            result = await runtime.execute("flood", {})
            shown = result.output_text
            match = re.search(
                r'\[output truncated — original size: ([\d,]+) bytes\]\n.*"(.+)"', shown
            )
            assert match is not None, shown[-300:]
            size = int(match[1].replace(",", ""))
            end = await runtime.execute(
                "tool_output_read", {"handle": match[2], "offset": size - 200}
            )
        # The runner's note at the guest's cap is part of the tool's text: it reaches the
        # model escaped, where the pipeline's own note (above) is not.
        assert end.output_text.endswith(
            "x\n\\[output truncated — original size: 104,857,600 bytes]"
            "\n\\[shown: the first 1,048,576 bytes]"
        )


class TestExit:
    async def test_non_zero_status_carries_stderr(self, runner: WasmToolRunner) -> None:
        with pytest.raises(ToolExecutionError, match="status 3; stderr: something broke"):
            await runner.run("status", b"", (), GuestLimits(timeout=5))


class TestConcurrency:
    async def test_cancellation_really_stops_the_guest(self, runner: WasmToolRunner) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(runner.run, "spin", b"", (), GuestLimits(timeout=30))
            await anyio.sleep(0.2)
            tg.cancel_scope.cancel()
        # A guest still spinning would burn a core for the next 0.4 s.
        start = cpu_seconds()
        await anyio.sleep(0.4)
        assert cpu_seconds() - start < 0.2

    async def test_event_loop_stays_responsive_and_calls_run_in_parallel(
        self, runner: WasmToolRunner
    ) -> None:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await anyio.sleep(0.01)
                ticks += 1

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            async with anyio.create_task_group() as calls:
                for _ in range(3):
                    calls.start_soon(runner.run, "nap", b"", (), GuestLimits(timeout=5))
            tg.cancel_scope.cancel()
        elapsed = time.monotonic() - start
        # One after another they cannot take less than 0.9 s, however fast the machine.
        assert elapsed < 0.3 * 3, f"three 300 ms naps took {elapsed:.2f} s"
        assert ticks >= 10
