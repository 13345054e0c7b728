"""A shell session's sandbox: one bubblewrap per session, each command forked inside it.

Every test runs the real sidecar with its built runner, through ``Runtime.from_config`` +
``execute("shell_exec", ...)``; the programs the default policy refuses (``setsid``,
``unshare``, ``kill``) are run through a daemon started without its policy
(:data:`.conftest.UNCHECKED`), which tests the sandbox alone. As root, the sidecar starts
each session's bubblewrap as uid 65534 (``shell.sandbox_uid``).
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import load_config
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult
from toolcage.sidecar import SidecarClient
from toolcage.sidecar._sandbox import RUNNER

from ..adversarial.principals._cast import (
    ADA,
    ADA_BRANCH,
    ADA_REVIEWER,
    BOB,
    config_with_agents,
)
from ..adversarial.principals.test_files import daemon_as_nobody, project
from .conftest import Daemon, descendants, make_workspace, processes_running, session_runners
from .test_runtime_sandbox import config_for, daemon_pid

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not RUNNER.is_file(), reason="the session runner is not built"),
]


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    config = config_for(make_workspace(), syntax={"background": True, "redirections": "any"})
    async with Runtime.from_config(config) as running:
        yield running


async def run(
    runtime: Runtime, command: str, ctx: ToolExecutionContext | None = None, **args: Any
) -> ToolResult:
    return await runtime.execute("shell_exec", {"command": command, **args}, ctx)


async def ok(runtime: Runtime, command: str, ctx: ToolExecutionContext | None = None) -> str:
    result = await run(runtime, command, ctx)
    assert not result.is_error, result.envelope()
    assert result.details["exit_code"] == 0, result.envelope()
    return result.output_text.rpartition("\n[exit code")[0]


async def gone(needle: bytes) -> None:
    """Wait until no process's command line holds ``needle`` (the test's timeout bounds it)."""
    while processes_running(needle):  # noqa: ASYNC110 (processes, not events)
        await anyio.sleep(0.02)


def marker() -> str:
    """A sleep length no other test uses, to find its processes by."""
    return str(100000 + uuid.uuid4().int % 800000)


class TestOneSandboxPerSession:
    async def test_a_sessions_commands_run_in_one_sandbox(self, runtime: Runtime) -> None:
        for _ in range(3):
            assert await ok(runtime, "echo hi") == "hi"
        assert len(session_runners(daemon_pid(runtime))) == 1

    async def test_principals_and_sessions_never_share_one(self, tmp_path: Path) -> None:
        workspace = make_workspace()
        body = f'[shell]\nworkspace = "{workspace}"\n[approval]\nauto_approve = ["shell_exec"]\n'
        config = load_config(config_with_agents(tmp_path, body))
        async with Runtime.from_config(config) as runtime:
            for ctx in (ADA, BOB, ADA_BRANCH, ADA):
                assert await ok(runtime, "echo hi", ctx) == "hi"
            refused = await run(runtime, "echo hi", ADA_REVIEWER)
            assert refused.error is not None
            assert refused.error.kind.value == "not_found"  # a restricted agent has no shell
            assert len(session_runners(daemon_pid(runtime))) == 3  # ada, bob, ada's branch

    async def test_a_killed_runner_gives_way_to_a_new_sandbox(self, runtime: Runtime) -> None:
        assert await ok(runtime, "echo one") == "one"
        (first,) = session_runners(daemon_pid(runtime))
        os.kill(first, signal.SIGKILL)
        while first in session_runners(daemon_pid(runtime)):  # noqa: ASYNC110 (processes, not events)
            await anyio.sleep(0.02)
        results = [await run(runtime, "echo two") for _ in range(2)]
        assert results[-1].output_text.startswith("two\n"), results[-1].envelope()
        assert session_runners(daemon_pid(runtime)) - {first}

    async def test_closing_the_runtime_leaves_no_sandbox(self) -> None:
        async with Runtime.from_config(config_for(make_workspace())) as runtime:
            await ok(runtime, "echo hi")
            left = descendants(daemon_pid(runtime))
            assert session_runners(daemon_pid(runtime))
        while left & descendants(1):  # noqa: ASYNC110 (processes, not events)
            await anyio.sleep(0.02)


class TestEachCommandApart:
    async def test_tmp_is_the_commands_own(self, runtime: Runtime) -> None:
        assert await ok(runtime, "echo x > /tmp/left; ls /tmp") == "left"
        assert await ok(runtime, "ls -A /tmp") == ""

    async def test_dev_shm_is_the_commands_own_and_dev_is_read_only(
        self, runtime: Runtime, unchecked: SidecarClient
    ) -> None:
        assert await ok(runtime, "echo x > /dev/shm/left; ls /dev/shm") == "left"
        assert await ok(runtime, "ls -A /dev/shm") == ""
        result = await sh(unchecked, "touch /dev/x || rm -f /dev/null")
        assert result["exit_code"] != 0, result
        assert "Read-only file system" in result["stderr"], result

    async def test_a_command_sees_only_its_own_processes(self, runtime: Runtime) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, runtime, "sleep 2", ADA)
            listed = await ok(runtime, "ls /proc", ADA)
        pids = sorted(int(name) for name in listed.split() if name.isdigit())
        assert pids == [1, 2, 3]  # its init, bash, ls

    async def test_no_capability_reaches_a_command(self, runtime: Runtime) -> None:
        status = await ok(runtime, "grep ^Cap /proc/self/status")
        assert [line.split()[1] for line in status.splitlines()] == ["0" * 16] * 5

    async def test_every_process_is_killed_at_the_deadline(self, runtime: Runtime) -> None:
        mark = marker()
        result = await run(runtime, f"nohup sleep {mark} & sleep {mark}.5", timeout=0.5)
        assert result.details["timed_out"] is True, result.envelope()
        await gone(f"sleep\0{mark}".encode())

    async def test_leftover_background_processes_end_with_it(self, runtime: Runtime) -> None:
        mark = marker()
        command = f"nohup sleep {mark} > /dev/null 2>&1 & echo started"
        assert await ok(runtime, command) == "started"
        await gone(f"sleep\0{mark}".encode())


@pytest.fixture
async def unchecked(daemon: Daemon) -> AsyncIterator[SidecarClient]:
    async with daemon.client() as client:
        yield client


async def sh(client: SidecarClient, command: str, seconds: float = 30) -> dict[str, Any]:
    session = f"session-{uuid.uuid4().hex[:8]}"
    return await client.request(
        "exec", session=session, command=command, timeout=seconds, output_bytes=65536
    )


class TestWhatTheSandboxRefuses:
    async def test_no_namespace_can_be_made(self, unchecked: SidecarClient) -> None:
        for flag in ("-U", "-m", "-p -f", "-r"):
            result = await sh(unchecked, f"unshare {flag} true")
            assert result["exit_code"] != 0, (flag, result)

    async def test_a_setsid_double_fork_dies_at_the_deadline(
        self, unchecked: SidecarClient
    ) -> None:
        mark = marker()
        command = f"setsid bash -c 'sleep {mark} & sleep {mark}.5' & sleep {mark}.7"
        result = await sh(unchecked, command, seconds=0.5)
        assert result["timed_out"] is True
        await gone(f"sleep\0{mark}".encode())

    async def test_a_command_cannot_signal_the_runner(
        self, daemon: Daemon, unchecked: SidecarClient
    ) -> None:
        session = f"session-{uuid.uuid4().hex[:8]}"
        results = []
        for command in ("echo first", "kill -KILL -1; true", "kill -KILL 1; true", "echo alive"):
            results.append(
                await unchecked.request(
                    "exec", session=session, command=command, timeout=30, output_bytes=4096
                )
            )
            if command == "echo first":
                before = session_runners(daemon.pid)
        assert results[-1]["stdout"] == "alive\n"
        assert before <= session_runners(daemon.pid)  # the session's runner is the same


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start the daemon as another uid")
class TestUnprivilegedSidecar:
    def test_a_daemon_as_nobody_runs_commands_in_session_sandboxes(self) -> None:
        root = project()
        users = root / "users"
        users.mkdir(mode=0o700)
        os.chown(users, 65534, 65534)
        config = root / "toolcage.toml"
        config.write_text('[shell]\nworkspace = "users/{user}/workspace"\n')
        # sync, and forked before any event loop runs: the child runs one of its own
        with daemon_as_nobody(config, root / "socket") as socket_path:
            anyio.run(_in_session_sandboxes, socket_path)


async def _in_session_sandboxes(socket_path: Path) -> None:
    async with SidecarClient(socket_path=socket_path) as client:
        for user in ("ada", "bob"):
            done = await client.request(
                "exec",
                session="s",
                user=user,
                agent="lead",
                command="grep ^Cap /proc/self/status; cat /proc/1/cmdline",
                timeout=30,
            )
            assert done["exit_code"] == 0, done
            caps, _, init = done["stdout"].partition("Cap")[2].rpartition("\n")
            assert init.startswith("/run/toolcage/runner\0"), done  # forked by the runner
            assert caps.count("0" * 16) == 5, done
