"""``shell_exec`` and ``shell_job`` results for two audiences, through a real Runtime,
sidecar and sandbox: ``details`` a caller decides on, and a display line for a person."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from toolcage.runtime import Runtime
from toolcage.runtime.shell import render

from ...sidecar.conftest import make_workspace
from .test_shell_tool import shell_config

pytestmark = pytest.mark.anyio


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    async with Runtime.from_config(shell_config(make_workspace())) as rt:
        yield rt


class TestShellExecDetails:
    async def test_a_command(self, runtime: Runtime) -> None:
        result = await runtime.execute("shell_exec", {"command": "echo hi && ls no-such-file"})
        assert not result.is_error, result.envelope()
        details = result.details
        assert (details["exit_code"], details["timed_out"]) == (2, False)
        assert details["stdout_bytes"] == 3
        assert details["stderr_bytes"] > 0
        assert details["cwd"] == "/workspace"
        assert "signal" not in details
        assert result.display == (
            f"Ran `echo hi && ls no-such-file` (exit 2, {details['duration']:.2f} s)"
        )
        assert "display" not in result.envelope()

    async def test_a_timeout(self, runtime: Runtime) -> None:
        result = await runtime.execute("shell_exec", {"command": "sleep 1000", "timeout": 1})
        assert result.is_error
        assert (result.details["timed_out"], result.details["signal"]) == (True, "SIGKILL")
        assert result.display == "`sleep 1000` timed out after 1 s"

    async def test_a_background_command_and_its_job(self, runtime: Runtime) -> None:
        started = await runtime.execute(
            "shell_exec", {"command": "echo up && sleep 30", "background": True}
        )
        job = started.details["job_id"]
        assert started.details == {"job_id": job, "background": True, "cwd": "/workspace"}
        assert started.display == f"Started `echo up && sleep 30` in the background (job {job})"
        polled = await runtime.execute("shell_job", {"job_id": job, "wait": 5})
        assert polled.details == {"job_id": job, "running": True, "exit_code": None}
        assert polled.display == f"Job {job} running"
        killed = await runtime.execute("shell_job", {"job_id": job, "action": "kill"})
        assert killed.details == {"job_id": job, "exit_code": 137}
        assert killed.display == f"Killed job {job}"


RESPONSE = {
    "exit_code": 0,
    "timed_out": False,
    "stdout": "",
    "stderr": "",
    "stdout_bytes": 0,
    "stderr_bytes": 0,
    "duration": 0.5,
    "cwd": "/workspace",
}


class TestRender:
    def test_an_exit_code_of_128_plus_n_names_the_signal(self) -> None:
        result = render({**RESPONSE, "exit_code": 139}, 30, "./crash\nmore")
        assert result.details["signal"] == "SIGSEGV"
        assert result.display == "Ran `./crash ...` (killed by SIGSEGV, 0.50 s)"

    def test_a_long_command_is_cut_in_the_display(self) -> None:
        result = render(RESPONSE, 30, "echo " + "x" * 100)
        assert result.display == f"Ran `echo {'x' * 55} ...` (exit 0, 0.50 s)"
