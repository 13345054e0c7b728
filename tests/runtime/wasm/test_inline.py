"""Guests that may start on the calling thread: quick ones finish there, slow ones move."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest
import wasmtime
from toolcage.host_bindings import CallState
from toolcage.policies import GrantedMount
from toolcage.runtime import ToolTimeoutError
from toolcage.runtime.wasm import GuestLimits, WasmToolRunner

pytestmark = pytest.mark.anyio


class ThreadBinding:
    """toolcage_test_v1.ping(x) = x + 4, noting the thread each call ran on."""

    name = "test"

    def __init__(self) -> None:
        self.threads: list[int] = []

    def define(self, linker: wasmtime.Linker) -> None:
        i32 = wasmtime.ValType.i32()
        linker.define_func("toolcage_test_v1", "ping", wasmtime.FuncType([i32], [i32]), self.ping)

    def ping(self, x: int) -> int:
        self.threads.append(threading.get_ident())
        return x + 4


def _state() -> CallState:
    return CallState("ping", 0.0, lambda m, f: None, lambda lvl, m: None)


class TestInline:
    async def test_a_quick_guest_runs_on_the_calling_thread(self, runner: WasmToolRunner) -> None:
        binding = ThreadBinding()
        for _ in range(20):
            result = await runner.run(
                "ping", b"", (), GuestLimits(timeout=5), bindings=[binding], state=_state(),
                inline=True,
            )  # fmt: skip
            assert result.output_text == "6"
        # a run the machine stalls past the budget moves to a guest thread; the rest stay
        assert threading.get_ident() in binding.threads

    async def test_without_the_callers_word_it_runs_on_a_guest_thread(
        self, runner: WasmToolRunner
    ) -> None:
        binding = ThreadBinding()
        await runner.run(
            "ping", b"", (), GuestLimits(timeout=5), bindings=[binding], state=_state()
        )
        assert len(binding.threads) == 1
        assert binding.threads[0] != threading.get_ident()

    async def test_a_guest_with_mounts_runs_on_a_guest_thread(
        self, runner: WasmToolRunner, tmp_path: Path
    ) -> None:
        # a WASI file operation can block (a FIFO swapped in): never on the caller's thread
        binding = ThreadBinding()
        mounts = (GrantedMount(tmp_path, "/workspace", False),)
        result = await runner.run(
            "ping", b"", mounts, GuestLimits(timeout=5), bindings=[binding], state=_state(),
            inline=True,
        )  # fmt: skip
        assert result.output_text == "6"
        assert binding.threads[0] != threading.get_ident()

    async def test_a_guest_that_overruns_moves_off_the_loop_and_still_meets_its_timeout(
        self, runner: WasmToolRunner
    ) -> None:
        ticks = 0
        finished = anyio.Event()

        async def tick() -> None:
            nonlocal ticks
            while not finished.is_set():
                await anyio.sleep(0.01)
                ticks += 1

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            with pytest.raises(ToolTimeoutError, match="timed out after 1 s"):
                await runner.run("spin", b"", (), GuestLimits(timeout=1), inline=True)
            finished.set()
        # the spinning guest left the event loop's thread: the loop kept running meanwhile
        assert ticks >= 3
