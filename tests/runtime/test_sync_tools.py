"""Synchronous host tools: what a deadline does to them, and that they never hold the exit."""

from __future__ import annotations

import json
import os
import textwrap
import threading
from pathlib import Path

import anyio
import pytest
from toolcage.runtime import (
    Runtime,
    ToolExecutionContext,
    ToolValidationError,
    UsageError,
    tool,
)

from .wasm.guest_tools import run_script

pytestmark = pytest.mark.anyio


class TestStuckThreads:
    def test_a_sync_tool_that_never_returns_does_not_block_exit(self, tmp_path: Path) -> None:
        script = textwrap.dedent(
            """
            import anyio, json, threading
            from toolcage.runtime import Runtime, tool

            @tool(timeout=0.2)
            def stuck() -> str:
                \"\"\"Wait for ever.\"\"\"
                threading.Event().wait()
                return "never"

            async def main():
                async with Runtime(tools=[stuck]) as runtime:
                    print(json.dumps((await runtime.execute("stuck", {})).envelope()))

            anyio.run(main)
            """
        )
        done = run_script(script, tmp_path)
        assert done.returncode == 0, done.stderr
        envelope = json.loads(done.stdout)
        assert (envelope["error_type"], envelope["message"]) == (
            "timeout",
            "Tool stuck timed out after 0.2 s",
        )


@tool(timeout=5, process=True)
def hang(pid_file: str) -> str:
    """Note the worker's pid (renamed into place: never read half-written), then never return."""
    aside = Path(pid_file + ".tmp")
    aside.write_text(str(os.getpid()))
    aside.replace(pid_file)
    threading.Event().wait()
    return "never"


@tool(process=True)
def total(values: list[int]) -> dict[str, int]:
    """Sum the values in a worker process."""
    return {"total": sum(values), "pid": os.getpid()}


@tool(process=True)
def refuse(reason: str) -> str:
    """Fail the way tools fail, or crash."""
    if reason == "typed":
        raise ToolValidationError("reason 'typed' is not accepted", field="reason")
    if reason == "exit":
        os._exit(3)
    raise ValueError(reason)


class TestWorkerProcess:
    async def test_a_process_tool_is_killed_at_its_deadline(self, tmp_path: Path) -> None:
        pid_file = tmp_path / "pid"
        async with Runtime(tools=[hang, total]) as runtime:
            await runtime.execute("total", {"values": []})  # the fork server is up
            result = await runtime.execute("hang", {"pid_file": str(pid_file)})
        envelope = result.envelope()
        assert (envelope["error_type"], envelope["message"]) == (
            "timeout",
            "Tool hang timed out after 5 s",
        )
        pid = int(pid_file.read_text())
        with pytest.raises(ProcessLookupError):  # killed and reaped before the result came
            os.kill(pid, 0)

    async def test_a_cancelled_process_tool_is_killed(self, tmp_path: Path) -> None:
        pid_file = tmp_path / "pid"
        async with Runtime(tools=[hang]) as runtime:
            with anyio.CancelScope() as scope:

                async def cancel_once_running() -> None:
                    while not pid_file.exists():  # noqa: ASYNC110 - another process's file
                        await anyio.sleep(0.01)
                    scope.cancel()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(cancel_once_running)
                    await runtime.execute("hang", {"pid_file": str(pid_file)})
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)

    async def test_a_process_tool_answers_from_another_process(self) -> None:
        async with Runtime(tools=[total]) as runtime:
            result = await runtime.execute("total", {"values": [1, 2, 3]})
        assert result.details["total"] == 6
        assert result.details["pid"] != os.getpid()

    @pytest.mark.parametrize(
        ("reason", "error_type", "message"),
        [
            ("typed", "validation_error", "reason 'typed' is not accepted"),
            ("bad", "execution_error", "ValueError: bad"),
            (
                "exit",
                "execution_error",
                "Tool refuse: its worker process ended without an answer (exit code 3)",
            ),
        ],
    )
    async def test_failures_come_back_typed(
        self, reason: str, error_type: str, message: str
    ) -> None:
        async with Runtime(tools=[refuse]) as runtime:
            envelope = (await runtime.execute("refuse", {"reason": reason})).envelope()
        assert (envelope["error_type"], envelope["message"]) == (error_type, message)

    def test_what_cannot_run_in_a_process_is_refused_at_declaration(self) -> None:
        def local() -> str:
            """Defined inside a function."""
            return ""

        async def coroutine() -> str:
            """Asynchronous."""
            return ""

        def with_context(ctx: ToolExecutionContext) -> str:
            """Takes the context."""
            return ""

        with pytest.raises(UsageError, match="top level"):
            tool(process=True)(local)
        with pytest.raises(UsageError, match="synchronous"):
            tool(process=True)(coroutine)
        with pytest.raises(UsageError, match="context"):
            tool(process=True)(with_context)
