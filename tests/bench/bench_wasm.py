"""The WASM sandbox's cost: file_read through the full pipeline.

``file_read`` of a 4 KB file through ``Runtime.execute`` (path policy, a fresh store and
instance, the guest, its read through the ``fs`` binding) beside the same read in plain
Python, through ``subprocess.run(["cat", f])`` and through a minimal bubblewrap sandbox
(``bwrap --ro-bind / / --unshare-all --die-with-parent cat f``); the bare runner (no
pipeline) and its parts show the split, and so do the path check and the tool's ``execute``
called alone (what is left of the call is the pipeline's own). The same reads are measured
again with a process spawned before each (``subprocess.run(["true"])``, as a host that also
runs commands does), beside a plain Python read measured the same way: a spawn leaves caches
and TLBs cold for everyone, so the plain read is the machine's share of that slowdown.
Sixteen tasks calling ``file_read`` at once give the throughput.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from toolcage.host_bindings import CallState, FsBinding, HostBinding, current_call
from toolcage.policies import GrantedMount
from toolcage.runtime import Runtime, ToolExecutionContext
from toolcage.runtime._deadline import CallDeadline
from toolcage.runtime._path_check import PathCheck
from toolcage.runtime.wasm import GuestLimits, WasmEngine, WasmTool, WasmToolRunner
from toolcage.runtime.wasm._capi import GuestStore, define_raw_func
from toolcage.runtime.wasm._control import STOP_MESSAGE, CallControl
from toolcage.runtime.wasm._outcome import GuestRun, outcome
from toolcage.runtime.wasm._runner import REPLY, _set_wasi, left_in_memory

from .stats import summarise, us

READS, SPAWNED_READS, ROUNDS = 1000, 300, 10
CONCURRENT, CONCURRENT_CALLS = 16, 200
BWRAP = ("bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent")
TARGET_MEDIAN, TARGET_BWRAP, TARGET_RATE = 150e-6, 25.0, 6000.0
PARTS = ("store", "wasi", "instantiate", "guest", "result", "close", "outcome")
"""The bare runner's steps, in order (the guest's step includes its ``fs`` host call)."""

CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
"""


def _spawn() -> None:
    subprocess.run(["true"], check=True)


async def _file_read(root: Path) -> dict[str, list[float]]:
    (root / "ws").mkdir()
    (root / "toolcage.toml").write_text(CONFIG)
    target = root / "ws" / "page.txt"
    target.write_text(("0123456789abcdef" * 4 + "\n") * 63)  # 4,095 bytes
    clock = time.perf_counter
    names = ("pipeline", "runner", "python", "cat", "bwrap", "concurrent", "spawned pipeline")
    around = ("path check", "tool")
    times: dict[str, list[float]] = {
        name: [] for name in (*names, "spawned python", *PARTS, *around)
    }

    def python_read() -> None:
        with open(target, encoding="utf-8") as f:  # a blocking read: the baseline
            f.read()

    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        args = {"path": "/workspace/page.txt"}
        for _ in range(50):
            await runtime.execute("file_read", args)
        # The pipeline's split: its path check alone, the tool's execute_now without the
        # pipeline, and the runner alone (what the runner does not do of execute_now is the
        # tool's own work). The four are measured in alternating rounds, so a machine that
        # gets busier or quieter meanwhile shifts them alike.
        check = next(c for c in runtime.pipeline.checks if isinstance(c, PathCheck))
        tool = runtime.pipeline.registry.get("file_read")
        assert isinstance(tool, WasmTool)
        ctx = ToolExecutionContext()
        mount = GrantedMount(root / "ws", "/workspace", False)
        stdin, limits = b'{"path": "/workspace/page.txt"}', GuestLimits(timeout=10)
        for _ in range(ROUNDS):
            for _ in range(READS // ROUNDS):
                started = clock()
                result = await runtime.execute("file_read", args)
                times["pipeline"].append(clock() - started)
                assert not result.is_error, result.output_text
            for _ in range(READS // ROUNDS):
                started = clock()
                checked = check.check(tool, args, ctx)
                times["path check"].append(clock() - started)
                started = clock()
                deadline = CallDeadline(time.monotonic() + tool.timeout, tool.timeout)
                if tool.execute_now(checked, ctx, deadline) is None:  # as the pipeline runs it
                    await tool.execute(checked, ctx)  # a run the machine stalled past the budget
                times["tool"].append(clock() - started)
            for _ in range(READS // ROUNDS):
                started = clock()
                _run_now(tool.runner, stdin, limits, tool.bindings, _state(mount))
                times["runner"].append(clock() - started)
        for _ in range(SPAWNED_READS):
            _spawn()
            started = clock()
            await runtime.execute("file_read", args)
            times["spawned pipeline"].append(clock() - started)
            _spawn()
            started = clock()
            python_read()
            times["spawned python"].append(clock() - started)

        async def caller() -> None:
            for _ in range(CONCURRENT_CALLS):
                result = await runtime.execute("file_read", args)
                assert not result.is_error, result.output_text

        for _ in range(3):
            started = clock()
            async with anyio.create_task_group() as tasks:
                for _ in range(CONCURRENT):
                    tasks.start_soon(caller)
            times["concurrent"].append(CONCURRENT * CONCURRENT_CALLS / (clock() - started))
    with WasmEngine() as engine:
        _bare_runner(engine, GrantedMount(root / "ws", "/workspace", False), times)
    for _ in range(READS):
        started = clock()
        python_read()
        times["python"].append(clock() - started)
    for _ in range(200):
        started = clock()
        subprocess.run(["cat", str(target)], capture_output=True, check=True)  # noqa: ASYNC221
        times["cat"].append(clock() - started)
    if shutil.which("bwrap"):
        for _ in range(100):
            started = clock()
            command = [*BWRAP, "cat", str(target)]
            subprocess.run(command, capture_output=True, check=True)  # noqa: ASYNC221
            times["bwrap"].append(clock() - started)
    return times


def _bare_runner(engine: WasmEngine, mount: GrantedMount, times: dict[str, list[float]]) -> None:
    """Each of the runner's steps (as ``WasmToolRunner._run_sync`` takes them)."""
    runner = WasmToolRunner(engine)
    stdin, limits = b'{"path": "/workspace/page.txt"}', GuestLimits(timeout=10)
    fs = [FsBinding(define_raw_func)]
    clock = time.perf_counter

    def state() -> CallState:
        return _state(mount)

    for _ in range(50):
        _run_now(runner, stdin, limits, fs, state())
    pre = runner.prepare("file_read", fs)
    control = CallControl(time.monotonic() + 3600)
    engine.enter(control)
    try:
        for _ in range(READS):
            call = state()
            token = current_call.set(call)
            marks = [clock()]
            store = GuestStore(
                engine.engine, limits.memory_bytes, control.should_stop, STOP_MESSAGE
            )
            marks.append(clock())
            _set_wasi(store, "file_read", stdin, (), None, None)
            marks.append(clock())
            instance = store.instantiate(pre)
            marks.append(clock())
            store.call(instance, b"_start")
            marks.append(clock())
            reply = left_in_memory(store, instance, REPLY)
            marks.append(clock())
            current_call.reset(token)
            call.release()
            store.close()
            marks.append(clock())
            outcome(GuestRun("file_read", None, None, reply=reply), 10)
            marks.append(clock())
            for name, (start, end) in zip(PARTS, itertools.pairwise(marks), strict=True):
                times[name].append(end - start)
    finally:
        engine.leave(control)


def _state(mount: GrantedMount) -> CallState:
    return CallState("file_read", time.monotonic() + 10, _ignore, _ignore, mounts=(mount,))


def _run_now(
    runner: WasmToolRunner,
    stdin: bytes,
    limits: GuestLimits,
    bindings: Sequence[HostBinding],
    state: CallState,
) -> None:
    """The bare runner, as the pipeline has it run file_read: on this thread (or, a run the
    machine stalled past the budget, on this thread again, as it would on a guest thread)."""
    if runner.run_now("file_read", stdin, limits, bindings=bindings, state=state) is None:
        runner.run_sync("file_read", stdin, (), limits, bindings=bindings, state=state)


def _ignore(*_: object) -> None:
    """Progress and log lines of the bare runner's calls go nowhere."""


def _met(ok: bool) -> str:
    return "met" if ok else "not met"


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        times = anyio.run(_file_read, Path(tmp))
    rates = times.pop("concurrent")
    med: dict[str, float] = {name: summarise(s)[0] for name, s in times.items() if s}
    p_med, p_p99 = summarise(times["pipeline"])
    bwrap = med.get("bwrap")
    split = ", ".join(f"{name} {us(med[name])}" for name in PARTS)
    lines = [
        f"file_read 4 KB through Runtime.execute: median {us(p_med)}, p99 {us(p_p99)} "
        f"(target: median <= {us(TARGET_MEDIAN)}: {_met(p_med <= TARGET_MEDIAN)})",
        f"  bare WasmToolRunner (store + instance + guest + fs read + result): "
        f"median {us(med['runner'])}; pipeline and tool around it: {us(p_med - med['runner'])}",
        f"  runner's steps: {split}",
        f"  around the runner: path check {us(med['path check'])}, WasmTool.execute_now (its "
        f"mounts, call state and arguments) {us(med['tool'] - med['runner'])}, "
        f"the rest of the pipeline (lookup, validation, deadline, bounds) "
        f"{us(p_med - med['tool'] - med['path check'])}",
        f"  plain Python read: median {us(med['python'])} "
        f"(pipeline = {p_med / med['python']:,.0f}x)",
        f"  subprocess cat: median {us(med['cat'])} (pipeline = {p_med / med['cat']:.2f}x of cat)",
    ]
    if bwrap is not None:
        lines.append(
            f"  minimal bwrap cat: median {us(bwrap)} (the pipeline is {bwrap / p_med:.1f}x "
            f"faster; target: >= {TARGET_BWRAP:.0f}x: {_met(bwrap / p_med >= TARGET_BWRAP)})"
        )
    spawned, spawned_python = med["spawned pipeline"], med["spawned python"]
    against = f", {bwrap / spawned:.1f}x faster than bwrap cat" if bwrap is not None else ""
    lines.append(
        f"  with a process spawned before each read: pipeline median {us(spawned)} "
        f"({spawned / p_med:.2f}x its tight loop{against}); plain Python read "
        f"{us(spawned_python)} ({spawned_python / med['python']:.2f}x its tight loop)"
    )
    rate = max(rates)
    lines.append(
        f"file_read from {CONCURRENT} tasks at once: {rate:,.0f} calls/s "
        f"(best of {len(rates)}; target: >= {TARGET_RATE:,.0f}: {_met(rate >= TARGET_RATE)})"
    )
    return lines


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "default")
    print("\n".join(run()))
