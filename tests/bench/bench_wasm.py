"""The WASM sandbox's cost: file_read through the full pipeline.

``file_read`` of a 4 KB file through ``Runtime.execute`` (path policy, a fresh store and
instance, the guest, its read through the ``fs`` binding) beside the same read in plain
Python, through ``subprocess.run(["cat", f])`` and through a minimal bubblewrap sandbox
(``bwrap --ro-bind / / --unshare-all --die-with-parent cat f``); the bare runner (no
pipeline) shows the split. Sixteen tasks calling ``file_read`` at once give the throughput.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
from toolcage.host_bindings import CallState, FsBinding
from toolcage.policies import GrantedMount
from toolcage.runtime import Runtime
from toolcage.runtime.wasm import GuestLimits, WasmEngine, WasmToolRunner
from toolcage.runtime.wasm._capi import define_raw_func

from .stats import summarise, us

READS = 1000
CONCURRENT, CONCURRENT_CALLS = 16, 200
BWRAP = ("bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent")

CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
"""


async def _file_read(root: Path) -> dict[str, list[float]]:
    (root / "ws").mkdir()
    (root / "toolcage.toml").write_text(CONFIG)
    target = root / "ws" / "page.txt"
    target.write_text(("0123456789abcdef" * 4 + "\n") * 63)  # 4,095 bytes
    clock = time.perf_counter
    times: dict[str, list[float]] = {
        "pipeline": [], "runner": [], "python": [], "cat": [], "bwrap": [], "concurrent": []
    }  # fmt: skip
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        args = {"path": "/workspace/page.txt"}
        for _ in range(50):
            await runtime.execute("file_read", args)
        for _ in range(READS):
            started = clock()
            result = await runtime.execute("file_read", args)
            times["pipeline"].append(clock() - started)
            assert not result.is_error, result.output_text

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
        runner = WasmToolRunner(engine)
        mounts = (GrantedMount(root / "ws", "/workspace", False),)
        stdin, limits = b'{"path": "/workspace/page.txt"}', GuestLimits(timeout=10)
        fs = [FsBinding(define_raw_func)]

        def read() -> None:
            state = CallState("file_read", time.monotonic() + 10, _ignore, _ignore, mounts=mounts)
            runner.run_sync("file_read", stdin, (), limits, bindings=fs, state=state)

        for _ in range(50):
            read()
        for _ in range(READS):
            started = clock()
            read()
            times["runner"].append(clock() - started)
    for _ in range(READS):
        started = clock()
        with open(target, encoding="utf-8") as f:  # noqa: ASYNC230 - the baseline is a blocking read
            f.read()
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


def _ignore(*_: object) -> None:
    """Progress and log lines of the bare runner's calls go nowhere."""


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        times = anyio.run(_file_read, Path(tmp))
    rates = times.pop("concurrent")
    med = {name: summarise(samples) for name, samples in times.items() if samples}
    p_med, p_p99 = med["pipeline"]
    lines = [
        f"file_read 4 KB through Runtime.execute: median {us(p_med)}, p99 {us(p_p99)} "
        "(target: median <= 0.5 ms)",
        f"  bare WasmToolRunner (store + instance + guest + fs read): "
        f"median {us(med['runner'][0])}",
        f"  plain Python read: median {us(med['python'][0])} "
        f"(pipeline = {p_med / med['python'][0]:,.0f}x)",
        f"  subprocess cat: median {us(med['cat'][0])} "
        f"(pipeline = {p_med / med['cat'][0]:.2f}x of cat)",
    ]
    if "bwrap" in med:
        lines.append(
            f"  minimal bwrap cat: median {us(med['bwrap'][0])} (the pipeline is "
            f"{med['bwrap'][0] / p_med:.1f}x faster; target: >= 10x)"
        )
    lines.append(
        f"file_read from {CONCURRENT} tasks at once: {max(rates):,.0f} calls/s "
        f"(best of {len(rates)}; target: >= 3,000)"
    )
    return lines


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "default")
    print("\n".join(run()))
