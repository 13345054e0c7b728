"""The daemon worker pools blocking tool work and guests run on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolcage.runtime import Runtime
from toolcage.runtime._threads import WorkerPool

pytestmark = pytest.mark.anyio


def wait_until(condition: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    """Poll ``condition`` (a safety net of ``seconds``, never a measured bound)."""
    until = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > until:
            pytest.fail(f"still waiting for: {what}")
        time.sleep(0.005)


def named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


class TestWorkerPool:
    async def test_runs_work_on_a_daemon_thread_and_delivers_results_and_errors(self) -> None:
        pool = WorkerPool("test-pool-a")

        def where() -> threading.Thread:
            return threading.current_thread()

        thread = await pool.run(where)
        assert thread is not threading.current_thread()
        assert thread.daemon
        assert thread.name == "test-pool-a"
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 // 0)
        pool.close()

    async def test_an_idle_worker_takes_the_next_job(self) -> None:
        pool = WorkerPool("test-pool-b")
        first = await pool.run(threading.get_ident)
        for _ in range(20):
            assert await pool.run(threading.get_ident) == first
        pool.close()

    async def test_a_blocked_job_does_not_hold_up_the_next(self) -> None:
        pool = WorkerPool("test-pool-c")
        release = threading.Event()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pool.run, lambda: release.wait(60))
            assert await pool.run(lambda: "ran beside it") == "ran beside it"
            release.set()
        pool.close()

    async def test_close_ends_idle_workers_and_busy_ones_when_their_job_returns(self) -> None:
        pool = WorkerPool("test-pool-d")
        running, release = threading.Event(), threading.Event()

        def block() -> None:
            running.set()
            release.wait(60)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pool.run, block)
            await anyio.to_thread.run_sync(running.wait)
            await pool.run(lambda: None)
            wait_until(lambda: len(named("test-pool-d")) == 2, "two workers")
            pool.close()
            wait_until(lambda: len(named("test-pool-d")) == 1, "the idle worker to end")
            release.set()
        wait_until(lambda: not named("test-pool-d"), "the busy worker to end")

    async def test_the_first_job_on_each_new_thread_runs_after_on_start(self) -> None:
        started: list[int] = []
        pool = WorkerPool("test-pool-e", on_start=lambda: started.append(threading.get_ident()))
        assert await pool.run(threading.get_ident) == started[0]
        pool.close()


CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
"""


async def test_a_closed_runtime_leaves_no_guest_thread(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
        # a write runs on a guest thread
        result = await runtime.execute("file_write", {"path": "/workspace/a.txt", "content": "x"})
        assert not result.is_error, result.output_text
        assert named("toolcage-guest")
    wait_until(lambda: not named("toolcage-guest"), "the guest threads to end")
