"""Guest threads run on the engine's guest CPU; nothing else is moved."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import wasmtime
from toolcage.host_bindings import CallState
from toolcage.runtime import Runtime
from toolcage.runtime.wasm import GuestLimits, WasmTool, WasmToolRunner
from toolcage.runtime.wasm._affinity import GuestCpu

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs a process allowed on several CPUs"
)


class AffinityProbe:
    """toolcage_test_v1.ping(x): records the CPU set of the thread the guest runs on."""

    name = "test"

    def __init__(self) -> None:
        self.seen: list[set[int]] = []

    def define(self, linker: wasmtime.Linker) -> None:
        def ping(x: int) -> int:
            self.seen.append(os.sched_getaffinity(0))
            return x

        i32 = wasmtime.ValType.i32()
        linker.define_func("toolcage_test_v1", "ping", wasmtime.FuncType([i32], [i32]), ping)


def _state() -> CallState:
    return CallState("ping", 0.0, lambda m, f: None, lambda lvl, m: None)


class TestGuestCpu:
    def test_pins_the_calling_thread_to_the_last_cpu(self) -> None:
        allowed = os.sched_getaffinity(0)
        guest_cpu = GuestCpu()
        assert guest_cpu.cpu == max(allowed)
        seen: list[set[int]] = []

        def pinned() -> None:
            guest_cpu.pin()
            seen.append(os.sched_getaffinity(0))

        thread = threading.Thread(target=pinned)
        thread.start()
        thread.join()
        assert seen == [{guest_cpu.cpu}]
        assert os.sched_getaffinity(0) == allowed  # only that thread moved

    def test_turned_off_changes_nothing(self) -> None:
        before = os.sched_getaffinity(0)
        guest_cpu = GuestCpu(enabled=False)
        assert guest_cpu.cpu is None
        guest_cpu.pin()
        assert os.sched_getaffinity(0) == before

    def test_a_thread_with_one_cpu_is_left_alone(self) -> None:
        chosen: list[int | None] = []

        def on_one_cpu() -> None:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            chosen.append(GuestCpu().cpu)

        thread = threading.Thread(target=on_one_cpu)
        thread.start()
        thread.join()
        assert chosen == [None]


class TestRunner:
    @pytest.mark.anyio
    async def test_the_guest_runs_on_the_guest_cpu(self, runner: WasmToolRunner) -> None:
        probe = AffinityProbe()
        result = await runner.run(
            "ping", b"", (), GuestLimits(timeout=5), bindings=[probe], state=_state()
        )
        assert not result.is_error, result.output_text
        assert probe.seen == [{runner.engine.guest_cpu.cpu}]

    def test_run_sync_runs_where_the_caller_is(self, runner: WasmToolRunner) -> None:
        before = os.sched_getaffinity(0)
        probe = AffinityProbe()
        runner.run_sync("ping", b"", (), GuestLimits(timeout=5), bindings=[probe], state=_state())
        assert probe.seen == [before]
        assert os.sched_getaffinity(0) == before

    @pytest.mark.anyio
    @pytest.mark.parametrize(("setting", "pinned"), [("true", True), ("false", False)])
    async def test_the_operator_decides(self, tmp_path: Path, setting: str, pinned: bool) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(f"[limits]\nguests_on_one_cpu = {setting}\n")
        async with Runtime.from_config(path) as runtime:
            tool = runtime.registry.get("file_read", "default")
            assert isinstance(tool, WasmTool)
            assert (tool.runner.engine.guest_cpu.cpu is not None) is pinned
