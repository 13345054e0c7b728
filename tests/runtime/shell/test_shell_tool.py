"""``shell_exec`` and ``shell_job`` through a real Runtime, sidecar and sandbox."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import ShellPolicy, ToolcageConfig
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, ToolResult
from toolcage.runtime.shell import ShellExecTool

from ...sidecar.conftest import make_workspace

pytestmark = pytest.mark.anyio


def shell_config(workspace: Path, **shell: Any) -> ToolcageConfig:
    return parse_config(
        {
            "shell": {"workspace": str(workspace), **shell},
            "approval": {"auto_approve": ["shell_exec"]},
        },
        base_dir=workspace.parent,
    )


@pytest.fixture
def workspace() -> Path:
    return make_workspace()


@pytest.fixture
async def runtime(workspace: Path) -> AsyncIterator[Runtime]:
    async with Runtime.from_config(shell_config(workspace)) as rt:
        yield rt


def shell_tool(runtime: Runtime) -> ShellExecTool:
    tool = runtime.registry.get("shell_exec")
    assert isinstance(tool, ShellExecTool)
    return tool


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue  # not a process, or gone meanwhile
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def daemon_pid(runtime: Runtime) -> int | None:
    sidecar = shell_tool(runtime).sidecar
    assert sidecar is not None
    assert sidecar.client.launcher is not None
    return sidecar.client.launcher.pid


class TestShellExec:
    async def test_declared_privileged(self, runtime: Runtime) -> None:
        info = {row.name: row for row in runtime.registry.listing()}
        assert info["shell_exec"].safety_tier is SafetyTier.PRIVILEGED
        assert "shell_job" in info

    async def test_needs_approval_like_any_privileged_tool(self, workspace: Path) -> None:
        config = parse_config({"shell": {"workspace": str(workspace)}}, base_dir=workspace)
        async with Runtime.from_config(config) as rt:
            result = await rt.execute("shell_exec", {"command": "echo hi"})
            assert result.error is not None
            assert result.error.kind.value == "permission_denied"
            assert daemon_pid(rt) is None

    async def test_runs_a_command(self, runtime: Runtime) -> None:
        result = await runtime.execute("shell_exec", {"command": "echo hi && pwd"})
        assert not result.is_error, result.envelope()
        assert result.output_text.startswith("hi\n/workspace\n")
        assert "[exit code 0," in result.output_text
        assert result.details["exit_code"] == 0

    async def test_the_policy_refuses_before_anything_is_sent(self, runtime: Runtime) -> None:
        result = await runtime.execute("shell_exec", {"command": "ls; ./evil.sh"})
        envelope = result.envelope()
        assert envelope["error_type"] == "permission_denied"
        assert "'./evil.sh'" in envelope["message"]
        assert envelope["field"] == "command"
        assert daemon_pid(runtime) is None  # the sidecar was not even started

    async def test_the_sidecar_refuses_on_its_own_as_permission_denied(
        self, runtime: Runtime, workspace: Path
    ) -> None:
        """With the runtime's early check widened, the sidecar's own check still refuses."""
        tool = shell_tool(runtime)
        tool.policy = ShellPolicy(tool.config.allowed | {"sh"})
        result = await runtime.execute("shell_exec", {"command": "sh -c 'echo escaped'"})
        envelope = result.envelope()
        assert envelope["error_type"] == "permission_denied", envelope
        assert envelope["message"].startswith("Shell policy refused 'sh'")
        assert envelope["field"] == "command"
        assert daemon_pid(runtime) is not None  # refused by the sidecar, not before it
        job = await runtime.execute(
            "shell_exec", {"command": "sh -c 'echo escaped'", "background": True}
        )
        assert job.envelope()["error_type"] == "permission_denied"

    async def test_a_failing_command_is_a_result_not_an_error(self, runtime: Runtime) -> None:
        result = await runtime.execute("shell_exec", {"command": "ls no-such-file"})
        assert not result.is_error
        assert result.details["exit_code"] == 2
        assert "[stderr]" in result.output_text

    async def test_sessions_keep_directory_and_variables(self, runtime: Runtime) -> None:
        await runtime.execute(
            "shell_exec", {"command": "mkdir -p app && cd app && export MODE=dev"}
        )
        result = await runtime.execute("shell_exec", {"command": "pwd && printenv MODE"})
        assert result.output_text.startswith("/workspace/app\ndev\n")
        other = await runtime.execute("shell_exec", {"command": "pwd", "session_id": "second"})
        assert other.output_text.startswith("/workspace\n")

    async def test_conversations_do_not_share_sessions(self, runtime: Runtime) -> None:
        await runtime.execute("shell_exec", {"command": "mkdir -p mine && cd mine"})
        stranger = ToolExecutionContext(session_id="another-conversation")
        result = await runtime.execute("shell_exec", {"command": "pwd"}, stranger)
        assert result.output_text.startswith("/workspace\n")

    async def test_a_timeout_is_a_timeout_error_with_partial_output(self, runtime: Runtime) -> None:
        started = time.monotonic()
        result = await runtime.execute(
            "shell_exec", {"command": "echo partial && sleep 1000", "timeout": 1}
        )
        assert time.monotonic() - started < 5
        envelope = result.envelope()
        assert envelope["error_type"] == "timeout"
        assert "partial" in envelope["message"]
        assert result.details["timed_out"] is True

    async def test_a_timeout_beyond_the_maximum_is_capped(self, workspace: Path) -> None:
        config = shell_config(workspace, limits={"max_timeout": 1, "timeout": 1})
        async with Runtime.from_config(config) as rt:
            started = time.monotonic()
            result = await rt.execute("shell_exec", {"command": "sleep 30", "timeout": 500})
            assert result.error is not None
            assert result.error.kind.value == "timeout"
            assert time.monotonic() - started < 5

    async def test_long_output_is_truncated_and_kept(self, runtime: Runtime) -> None:
        result = await runtime.execute("shell_exec", {"command": "seq 1 20000"})
        assert len(result.output_text.encode()) < 20 * 1024
        assert result.details["stdout_bytes"] > 100_000

    async def test_kill_9_of_the_sidecar_mid_call(self, runtime: Runtime) -> None:
        await runtime.execute("shell_exec", {"command": "true"})
        pid = daemon_pid(runtime)
        assert pid is not None

        async def murder() -> None:
            await anyio.sleep(0.5)
            os.kill(pid, signal.SIGKILL)

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(murder)
            result = await runtime.execute("shell_exec", {"command": "sleep 20", "timeout": 10})
        assert time.monotonic() - started < 10
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "sidecar" in result.error.message
        again = await runtime.execute("shell_exec", {"command": "echo recovered"})
        assert again.output_text.startswith("recovered\n")
        assert daemon_pid(runtime) != pid

    async def test_closing_the_runtime_stops_a_running_command(self, workspace: Path) -> None:
        runtime = Runtime.from_config(shell_config(workspace))
        await runtime.execute("shell_exec", {"command": "true"})
        pid = daemon_pid(runtime)
        assert pid is not None
        results: list[ToolResult] = []

        async def run() -> None:
            results.append(await runtime.execute("shell_exec", {"command": "sleep 60"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            while not children(pid):  # noqa: ASYNC110 (a process, not an event of ours)
                await anyio.sleep(0.01)
            await runtime.aclose()
        (result,) = results
        assert result.error is not None
        assert result.error.kind.value == "cancelled"
        assert "the runtime is closed" in result.error.message
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)

    async def test_a_wedged_sidecar_is_a_timeout_then_replaced(self, runtime: Runtime) -> None:
        await runtime.execute("shell_exec", {"command": "true"})
        pid = daemon_pid(runtime)
        assert pid is not None

        async def freeze() -> None:
            await anyio.sleep(0.3)
            os.kill(pid, signal.SIGSTOP)

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(freeze)
            result = await runtime.execute("shell_exec", {"command": "sleep 20", "timeout": 1})
        assert time.monotonic() - started < 12
        assert result.error is not None
        assert result.error.kind.value == "timeout"
        assert "did not answer" in result.error.message
        again = await runtime.execute("shell_exec", {"command": "echo thawed"})
        assert again.output_text.startswith("thawed\n")
        assert daemon_pid(runtime) != pid
        with pytest.raises(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)

    async def test_background_command_and_shell_job(self, runtime: Runtime) -> None:
        started = await runtime.execute(
            "shell_exec", {"command": "echo up && sleep 30", "background": True}
        )
        job = started.details["job_id"]
        polled = await runtime.execute("shell_job", {"job_id": job, "wait": 5})
        assert polled.output_text.startswith("up\n")
        assert polled.details["running"] is True
        killed = await runtime.execute("shell_job", {"job_id": job, "action": "kill"})
        assert killed.details["exit_code"] == 137
        gone = await runtime.execute("shell_job", {"job_id": job})
        assert gone.error is not None
        assert gone.error.kind.value == "validation_error"

    async def test_output_lost_between_reads_is_marked_where_it_was_lost(
        self, workspace: Path
    ) -> None:
        config = shell_config(workspace, limits={"output_bytes": 4096})
        async with Runtime.from_config(config) as rt:
            started = await rt.execute(
                "shell_exec",
                {
                    "command": "head -c 100000 /dev/zero | tr '\\0' x; echo END; touch done",
                    "background": True,
                },
            )
            # The pipe holds at most 64 KiB, so by now the sidecar has read far past its ring.
            while not (workspace / "done").exists():  # noqa: ASYNC110 - another process's file
                await anyio.sleep(0.01)
            job = started.details["job_id"]
            reads = [await rt.execute("shell_job", {"job_id": job, "wait": 5})]
            while reads[-1].details["running"]:
                reads.append(await rt.execute("shell_job", {"job_id": job, "wait": 5}))
        first = reads[0].output_text
        assert re.match(  # the sidecar's note, escaped by the pipeline as the tool's line
            r"\\\[output truncated — original size: [\d,]+ bytes\]\n"
            r"\\\[shown: the last 4,096 bytes\]\nxxxx",
            first,
        ), first[:200]
        assert "END\n" in "".join(r.output_text for r in reads)


class TestModes:
    async def test_disabled_answers_permission_denied(self, workspace: Path) -> None:
        async with Runtime.from_config(shell_config(workspace, mode="disabled")) as rt:
            assert "shell_exec" in rt.registry
            assert "shell_job" not in rt.registry
            result = await rt.execute("shell_exec", {"command": "echo hi"})
        envelope = result.envelope()
        assert envelope["error_type"] == "permission_denied"
        assert "disabled" in envelope["message"]

    async def test_extra_allow_extends_the_defaults(self, workspace: Path) -> None:
        config = shell_config(workspace, extra_allow=["bash"])
        async with Runtime.from_config(config) as rt:
            result = await rt.execute("shell_exec", {"command": "bash -c 'echo nested'"})
            refused = await rt.execute("shell_exec", {"command": "bash -c './x.sh'"})
        assert result.output_text.startswith("nested\n")
        assert refused.error is not None
        assert refused.error.kind.value == "permission_denied"
