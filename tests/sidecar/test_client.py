"""The runtime's client and launcher: on-demand start, crash, restart, startup failures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from toolcage.policies import ShellConfig, ShellMode
from toolcage.sidecar import SidecarClient, SidecarLauncher, SidecarLost, SidecarUnavailable

from .conftest import TEST_LIMITS, descendants, make_workspace, scratch

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace() -> Path:
    return make_workspace()


@pytest.fixture
async def launched(workspace: Path) -> AsyncIterator[SidecarClient]:
    launcher = SidecarLauncher(ShellConfig(workspace=workspace, limits=TEST_LIMITS))
    async with SidecarClient(launcher) as client:
        yield client


class TestLauncher:
    async def test_the_daemon_starts_on_first_use(self, launched: SidecarClient) -> None:
        assert launched.launcher is not None
        assert launched.launcher.pid is None
        await launched.ping()
        assert launched.launcher.alive()
        directory = launched.launcher.socket_path.parent  # type: ignore[union-attr]
        assert oct(directory.stat().st_mode & 0o777) == "0o700"
        assert oct(launched.launcher.socket_path.stat().st_mode & 0o777) == "0o600"  # type: ignore[union-attr]

    async def test_kill_9_mid_call_is_an_error_then_the_next_call_works(
        self, launched: SidecarClient
    ) -> None:
        launcher = launched.launcher
        assert launcher is not None
        await launched.ping()
        first_pid = launcher.pid
        assert first_pid is not None

        async def murder() -> None:
            await anyio.sleep(0.5)
            os.kill(first_pid, signal.SIGKILL)

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(murder)
            with pytest.raises(SidecarLost):
                await launched.request("exec", session="s", command="sleep 30", timeout=20)
        assert time.monotonic() - started < 5
        result = await launched.request("exec", session="s", command="echo back", timeout=10)
        assert result["stdout"] == "back\n"
        assert launcher.pid != first_pid
        while descendants(first_pid):  # noqa: ASYNC110 (its sandboxes die with it)
            await anyio.sleep(0.02)

    async def test_a_daemon_found_dead_is_restarted(self, launched: SidecarClient) -> None:
        launcher = launched.launcher
        assert launcher is not None
        await launched.ping()
        first_pid = launcher.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        await anyio.sleep(0.2)
        await launched.ping()
        assert launcher.pid not in (None, first_pid)

    async def test_closing_stops_the_daemon(self, workspace: Path) -> None:
        launcher = SidecarLauncher(ShellConfig(workspace=workspace))
        client = SidecarClient(launcher)
        await client.ping()
        pid = launcher.pid
        directory = launcher.socket_path.parent  # type: ignore[union-attr]
        await client.aclose()
        assert not launcher.alive()
        assert not directory.exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # type: ignore[arg-type]

    async def test_a_daemon_that_cannot_start_says_why(self, tmp_path: Path) -> None:
        missing = tmp_path / "no-such-workspace"
        launcher = SidecarLauncher(ShellConfig(workspace=missing))
        async with SidecarClient(launcher) as client:
            with pytest.raises(SidecarUnavailable, match="is not a directory"):
                await client.ping()

    async def test_an_interpreter_that_cannot_be_run_says_why(
        self, workspace: Path, tmp_path: Path
    ) -> None:
        unrunnable = tmp_path / "python"
        unrunnable.write_text("")  # not executable
        runtime_dir = tmp_path / "run"
        runtime_dir.mkdir()
        launcher = SidecarLauncher(
            ShellConfig(workspace=workspace), runtime_dir=runtime_dir, python=str(unrunnable)
        )
        async with SidecarClient(launcher) as client:
            with pytest.raises(SidecarUnavailable, match=f"{unrunnable} cannot be run as uid"):
                await client.ping()
        assert not list(runtime_dir.iterdir())  # its private directory is removed


def run_sidecar(
    config: ShellConfig, *, env: dict[str, str] | None = None, socket_dir: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    directory = socket_dir or scratch("sock-")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "toolcage.sidecar",
            "--socket",
            str(directory / "s.sock"),
            "--config-stdin",
        ],
        input=config.model_dump_json().encode() + b"\n",
        capture_output=True,
        env=env,
        timeout=30,
        check=False,
    )


class TestStartup:
    def test_without_bubblewrap_it_refuses_to_start(self, workspace: Path) -> None:
        env = {**os.environ, "PATH": "/nonexistent"}
        done = run_sidecar(ShellConfig(workspace=workspace), env=env)
        assert done.returncode == 2
        assert b"bubblewrap (bwrap) is not installed" in done.stderr
        assert b"ready" not in done.stdout

    def test_a_socket_directory_open_to_others_is_refused(self, workspace: Path) -> None:
        directory = scratch("sock-")
        directory.chmod(0o755)
        done = run_sidecar(ShellConfig(workspace=workspace), socket_dir=directory)
        assert done.returncode == 2
        assert b"open to other users" in done.stderr

    @pytest.mark.skipif(os.geteuid() != 0, reason="commands change uid only under a root sidecar")
    async def test_a_workspace_beneath_a_private_directory_is_reached_all_the_same(
        self, workspace: Path
    ) -> None:
        workspace.parent.chmod(0o700)
        launcher = SidecarLauncher(ShellConfig(workspace=workspace, limits=TEST_LIMITS))
        async with SidecarClient(launcher) as client:
            done = await client.request("exec", session="s", command="echo hi > x", timeout=30)
            assert done["exit_code"] == 0, done
        assert (workspace / "x").read_text() == "hi\n"
        assert oct(workspace.parent.stat().st_mode & 0o777) == "0o700"

    def test_disabled_mode_does_not_start(self, workspace: Path) -> None:
        done = run_sidecar(ShellConfig(workspace=workspace, mode=ShellMode.DISABLED))
        assert done.returncode == 2
        assert b"disabled" in done.stderr

    def test_standalone_with_a_config_file_until_sigterm(self, workspace: Path) -> None:
        config = workspace.parent / "toolcage.toml"
        config.write_text('[shell]\nworkspace = "workspace"\n')
        directory = scratch("sock-")
        socket_path = directory / "s.sock"
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolcage.sidecar",
                "--socket",
                str(socket_path),
                "--config",
                str(config),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == b"ready\n"
            assert socket_path.is_socket()
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=10)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == 0
        assert b"stopping on SIGTERM" in stderr
        assert not socket_path.exists()

    async def test_host_mode_warns_and_runs_on_the_host(self, workspace: Path) -> None:
        launcher = SidecarLauncher(ShellConfig(workspace=workspace, mode=ShellMode.HOST))
        async with SidecarClient(launcher) as client:
            result = await client.request("exec", session="s", command="pwd; ls /", timeout=10)
            log = (launcher.socket_path.parent / "sidecar.log").read_text()  # type: ignore[union-attr]
        assert result["stdout"].startswith(f"{workspace}\n")
        assert "UNSAFE" in log
