"""Guests that stop and resources that return: deadlines, close, exit, failed guests kept."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolcage.runtime import Runtime, ToolResult, ToolTimeoutError
from toolcage.runtime._deadline import abandoned_count, run_with_deadline
from toolcage.runtime.wasm import GuestLimits, WasmToolRunner
from toolcage.runtime.wasm._engine import POOL_INSTANCES

from .guest_tools import add_guest, run_script

pytestmark = pytest.mark.anyio


def workspace_config(tmp_path: Path) -> Path:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    config = tmp_path / "toolcage.toml"
    config.write_text(
        '[[mounts.areas]]\nhost = "workspace"\nguest = "/workspace"\n'
        'tiers = { read_only = "ro", side_effecting = "rw" }\n'
    )
    return config


async def wait_for(condition: Callable[[], bool]) -> None:
    """Poll ``condition()`` until it holds (the test's own timeout is the limit)."""
    while not condition():  # noqa: ASYNC110 - the condition is another thread's state
        await anyio.sleep(0.005)


class TestGuestDeadline:
    async def test_the_guest_reports_its_own_timeout_and_nothing_is_abandoned(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        async with Runtime.from_config(workspace_config(tmp_path)) as runtime:
            spin = add_guest(runtime, "spin", guest_wasm["spin"], timeout=0.3)
            runtime.pipeline.stop_grace = 60.0  # a busy machine still stops the guest first
            result = await runtime.execute("spin", {})
            assert result.envelope()["error_type"] == "timeout"
            assert result.envelope()["message"] == "Tool spin timed out after 0.3 s"
            assert abandoned_count() == 0
            assert spin.runner.engine.running() == 0

    async def test_an_earlier_call_deadline_stops_the_guest(self, runner: WasmToolRunner) -> None:
        work = runner.run("spin", b"", (), GuestLimits(timeout=3600))
        with pytest.raises(ToolTimeoutError, match=r"timed out after 0\.2 s"):
            await run_with_deadline(work, 0.2, grace=60.0)
        assert runner.engine.running() == 0
        assert abandoned_count() == 0


class TestClose:
    async def test_close_stops_a_spinning_guest_and_refuses_later_calls(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        runtime = Runtime.from_config(workspace_config(tmp_path))
        spin = add_guest(runtime, "spin", guest_wasm["spin"], timeout=3600)
        results: list[ToolResult] = []

        async def call() -> None:
            results.append(await runtime.execute("spin", {}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await wait_for(lambda: spin.runner.engine.running() == 1)
            await runtime.aclose()
            assert spin.runner.engine.running() == 0
        assert results[0].envelope()["error_type"] == "cancelled"
        assert "the runtime is closed" in results[0].envelope()["message"]
        for name in ("spin", "file_read", "tool_output_read"):
            later = (await runtime.execute(name, {})).envelope()
            assert later["error_type"] == "cancelled", later
            assert later["message"] == f"Tool {name} was cancelled: the runtime is closed"

    def test_a_process_with_a_guest_spinning_during_close_exits(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        (tmp_path / "spin.wasm").write_bytes(guest_wasm["spin"])
        script = textwrap.dedent(
            """
            import anyio, json, pathlib
            from toolcage.runtime import Runtime
            from tests.runtime.wasm.guest_tools import add_guest

            async def main():
                runtime = Runtime.from_config(None)
                spin = add_guest(runtime, "spin", pathlib.Path("spin.wasm").read_bytes(),
                                 timeout=3600)
                results = []
                async def call():
                    results.append(await runtime.execute("spin", {}))
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    while spin.runner.engine.running() == 0:
                        await anyio.sleep(0.005)
                    await runtime.aclose()
                print(json.dumps(results[0].envelope()))

            anyio.run(main)
            """
        )
        done = run_script(script, tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["error_type"] == "cancelled"
        assert "panicked" not in done.stderr

    def test_a_guest_left_running_at_exit_does_not_keep_the_process(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        (tmp_path / "spin.wasm").write_bytes(guest_wasm["spin"])
        script = textwrap.dedent(
            """
            import pathlib, threading
            from toolcage.runtime.wasm import GuestLimits, WasmEngine, WasmToolRunner

            engine = WasmEngine()  # never closed: the process exits with it open
            runner = WasmToolRunner(engine)
            runner.modules.add("spin", pathlib.Path("spin.wasm").read_bytes())
            limits = GuestLimits(timeout=3600)
            threading.Thread(
                target=runner.run_sync, args=("spin", b"", (), limits), daemon=True
            ).start()
            while engine.running() == 0:
                pass
            print("spinning")
            """
        )
        done = run_script(script, tmp_path)
        assert (done.returncode, done.stdout.strip()) == (0, "spinning"), done.stderr
        assert "panicked" not in done.stderr


class TestResources:
    async def test_more_guests_at_once_than_pool_slots_all_run(
        self, runner: WasmToolRunner
    ) -> None:
        results: list[str] = []

        async def nap() -> None:
            result = await runner.run("nap", b"", (), GuestLimits(timeout=600))
            results.append(result.output_text)

        async with anyio.create_task_group() as tg:
            for _ in range(POOL_INSTANCES + 32):
                tg.start_soon(nap)
        assert results == ["rested"] * (POOL_INSTANCES + 32)

    def test_two_hundred_runtimes_are_created_used_and_closed_in_one_process(
        self, tmp_path: Path
    ) -> None:
        script = textwrap.dedent(
            """
            import anyio, pathlib
            from toolcage.runtime import Runtime

            pathlib.Path("workspace/note.txt").write_text("hello")

            async def main():
                closed = []  # a host may keep closed runtimes: close alone must release
                for _ in range(200):
                    async with Runtime.from_config(None) as runtime:
                        result = await runtime.execute("file_read", {"path": "/workspace/note.txt"})
                        assert not result.is_error, result.envelope()
                    closed.append(runtime)
                maps = len(pathlib.Path("/proc/self/maps").read_text().splitlines())
                print(maps)

            anyio.run(main)
            """
        )
        done = run_script(script, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert int(done.stdout) < 5000  # one open engine alone costs a few hundred
        assert "panicked" not in done.stderr

    def test_a_thousand_kept_failures_cost_bounded_memory_and_the_next_call_works(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        (tmp_path / "hog.wasm").write_bytes(guest_wasm["hog"])
        (tmp_path / "status.wasm").write_bytes(guest_wasm["status"])
        script = textwrap.dedent(
            """
            import anyio, json, pathlib
            from toolcage.runtime import Runtime
            from tests.runtime.wasm.guest_tools import add_guest

            def rss():
                for line in pathlib.Path("/proc/self/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024

            async def main():
                pathlib.Path("workspace/note.txt").write_text("hello")
                async with Runtime.from_config(None) as runtime:
                    add_guest(runtime, "hog", pathlib.Path("hog.wasm").read_bytes(),
                              memory_bytes=8 << 20)
                    add_guest(runtime, "status", pathlib.Path("status.wasm").read_bytes())
                    kept = [await runtime.execute("hog", {}), await runtime.execute("status", {})]
                    before = rss()
                    for i in range(1000):
                        kept.append(await runtime.execute("hog" if i % 2 else "status", {}))
                    grown = rss() - before
                    after = await runtime.execute("file_read", {"path": "/workspace/note.txt"})
                    kinds = sorted({r.envelope()["error_type"] for r in kept})
                    print(json.dumps({"grown": grown, "kinds": kinds, "after": after.envelope()}))

            anyio.run(main)
            """
        )
        done = run_script(script, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(done.stdout)
        assert report["kinds"] == ["execution_error"]
        assert report["after"]["status"] == "success", report["after"]
        assert report["grown"] < 100 << 20, f"RSS grew by {report['grown'] / 2**20:.0f} MiB"
        assert "panicked" not in done.stderr

    def test_a_process_exits_without_a_panic_after_failed_guests(
        self, guest_wasm: dict[str, bytes], tmp_path: Path
    ) -> None:
        (tmp_path / "status.wasm").write_bytes(guest_wasm["status"])
        script = textwrap.dedent(
            """
            import anyio, pathlib
            from toolcage.runtime import Runtime
            from tests.runtime.wasm.guest_tools import add_guest

            kept = []

            async def main():
                runtime = Runtime.from_config(None)  # left open: exit must cope
                add_guest(runtime, "status", pathlib.Path("status.wasm").read_bytes())
                for _ in range(100):
                    kept.append(await runtime.execute("status", {}))
                print(kept[-1].envelope()["error_type"])

            anyio.run(main)
            """
        )
        done = run_script(script, tmp_path)
        assert (done.returncode, done.stdout.strip()) == (0, "execution_error"), done.stderr
        assert "panicked" not in done.stderr
