"""Guests that may start on the calling thread: quick ones finish there, slow ones move;
through the pipeline, such a call runs with no task at all."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
import wasmtime
from toolcage.host_bindings import CallState
from toolcage.policies import GrantedMount
from toolcage.runtime import Runtime, ToolTimeoutError
from toolcage.runtime._deadline import CallDeadline
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


class TestRunNow:
    def test_a_spinning_guest_is_stopped_at_the_calls_deadline(
        self, runner: WasmToolRunner
    ) -> None:
        # the call's deadline comes before the budget on the calling thread: a timeout,
        # named after the call's limit, not the guest's own
        deadline = CallDeadline(time.monotonic() + 0.001, 0.5)
        with pytest.raises(ToolTimeoutError, match=r"timed out after 0\.5 s"):
            runner.run_now("spin", b"", GuestLimits(timeout=5), deadline=deadline)

    def test_a_guest_that_overruns_is_left_to_the_usual_way(self, runner: WasmToolRunner) -> None:
        assert runner.run_now("spin", b"", GuestLimits(timeout=5)) is None
        # and the next call does not start it here again
        assert runner.run_now("spin", b"", GuestLimits(timeout=5)) is None

    async def test_a_quick_guest_returns_its_result(self, runner: WasmToolRunner) -> None:
        binding = ThreadBinding()
        here = 0
        for _ in range(20):
            limits = GuestLimits(timeout=5)
            result = runner.run_now("ping", b"", limits, bindings=[binding], state=_state())
            here += result is not None
            if result is None:  # the machine stalled it past the budget: the usual way
                result = await runner.run(
                    "ping", b"", (), limits, bindings=[binding], state=_state(), inline=True
                )
            assert result.output_text == "6"
        assert here > 0
        assert threading.get_ident() in binding.threads


class TestThroughThePipeline:
    async def test_a_file_read_finishes_without_a_turn_of_the_event_loop(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "a.txt").write_text("hello\n")
        (tmp_path / "toolcage.toml").write_text(
            '[[mounts.areas]]\nhost = "ws"\nguest = "/workspace"\n'
            'tiers = { read_only = "ro", side_effecting = "rw" }\n'
        )
        turns = 0
        without_a_turn = 0

        async def count_turns() -> None:
            nonlocal turns
            while True:
                turns += 1
                await anyio.lowlevel.checkpoint()

        config = tmp_path / "toolcage.toml"
        async with Runtime.from_config(config) as runtime, anyio.create_task_group() as tasks:
            tasks.start_soon(count_turns)
            await anyio.lowlevel.checkpoint()
            for _ in range(20):
                before = turns
                result = await runtime.execute("file_read", {"path": "/workspace/a.txt"})
                assert result.output_text == "hello\n"
                without_a_turn += turns == before
            tasks.cancel_scope.cancel()
        # no task and no turn of the loop for the call (one the machine stalls past the
        # budget on the loop's thread runs on a guest thread, with turns)
        assert without_a_turn > 0

    async def test_calls_back_to_back_still_give_the_loop_its_turns(self, tmp_path: Path) -> None:
        # a caller's own deadline is a timer of the event loop: it fires, and the loop of
        # calls ends, although each call could finish without the loop
        (tmp_path / "ws").mkdir()
        (tmp_path / "ws" / "a.txt").write_text("hello\n")
        (tmp_path / "toolcage.toml").write_text(
            '[[mounts.areas]]\nhost = "ws"\nguest = "/workspace"\n'
            'tiers = { read_only = "ro", side_effecting = "rw" }\n'
        )
        calls = 0
        async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
            for _ in range(20):  # compiled and warm: the calls run on this thread
                await runtime.execute("file_read", {"path": "/workspace/a.txt"})
            with anyio.move_on_after(0.05) as scope:
                for calls in range(1, 100_000):  # noqa: B007 - counted for the message
                    await runtime.execute("file_read", {"path": "/workspace/a.txt"})
        assert scope.cancelled_caught, f"{calls} calls ran past their caller's deadline"
