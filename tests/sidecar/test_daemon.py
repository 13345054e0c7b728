"""The daemon over its real socket: sessions, timeouts, limits and the sandbox itself.

These send commands straight to a daemon started with ``--unsafe-skip-policy`` -- no shell
policy in front -- so that the sandbox is tested for what it contains on its own.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.sidecar import SidecarClient, SidecarError

from .conftest import TEST_LIMITS, Daemon, command_processes, processes_running, scratch

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(daemon: Daemon) -> AsyncIterator[SidecarClient]:
    async with daemon.client() as shell:
        yield shell


@pytest.fixture
def session() -> str:
    return "test-" + uuid.uuid4().hex[:8]


async def run(
    client: SidecarClient, session: str, command: str, seconds: float = 10, **extra: Any
) -> dict[str, Any]:
    return await client.request("exec", session=session, command=command, timeout=seconds, **extra)


THIS_FILE = Path(__file__).resolve()


def plant_secret() -> Path:
    """A world-readable file outside the workspace."""
    directory = scratch("secret-")
    directory.chmod(0o755)
    secret = directory / "secret.txt"
    secret.write_text("SENTINEL-SECRET-7f3a\n")
    secret.chmod(0o644)
    return secret


def take_file(path: Path) -> str:
    text = path.read_text()
    path.unlink()
    return text


class TestSessions:
    async def test_the_working_directory_persists(
        self, client: SidecarClient, session: str
    ) -> None:
        await run(client, session, f"mkdir -p {session}/a/b && cd {session}/a/b")
        result = await run(client, session, "pwd")
        assert result["stdout"] == f"/workspace/{session}/a/b\n"
        assert result["cwd"] == f"/workspace/{session}/a/b"

    async def test_exported_variables_persist(self, client: SidecarClient, session: str) -> None:
        await run(client, session, "export GREETING='hello there' && export OTHER=2")
        result = await run(client, session, 'echo "$GREETING/$OTHER"')
        assert result["stdout"] == "hello there/2\n"

    async def test_sessions_are_independent(self, client: SidecarClient, session: str) -> None:
        await run(client, session, f"mkdir -p {session} && cd {session} && export ONLY_HERE=1")
        other = await run(client, session + "-other", 'pwd; echo "[$ONLY_HERE]"')
        assert other["stdout"] == "/workspace\n[]\n"
        assert other["created"] is True

    async def test_a_cd_out_of_the_workspace_is_not_carried_over(
        self, client: SidecarClient, session: str
    ) -> None:
        inside = await run(client, session, "cd /usr && pwd")
        assert inside["stdout"] == "/usr\n"
        after = await run(client, session, "pwd")
        assert after["stdout"] == "/workspace\n"

    async def test_protected_variables_are_not_carried_over(
        self, client: SidecarClient, session: str
    ) -> None:
        await run(client, session, "export LD_PRELOAD=/workspace/x.so GIT_DIR=/x BASH_ENV=/x OK=1")
        result = await run(client, session, 'echo "[$LD_PRELOAD][$GIT_DIR][$BASH_ENV][$OK]"')
        assert result["stdout"] == "[][][][1]\n"

    async def test_a_vanished_directory_falls_back_to_the_root(
        self, client: SidecarClient, session: str
    ) -> None:
        await run(client, session, f"mkdir -p {session} && cd {session}")
        await run(client, session, f"rmdir /workspace/{session}")
        result = await run(client, session, "pwd")
        assert result["stdout"] == "/workspace\n"
        assert "is gone" in result["stderr"]

    async def test_exit_code_stdout_stderr_and_duration(
        self, client: SidecarClient, session: str
    ) -> None:
        result = await run(client, session, "echo out; echo err >&2; exit 3")
        assert result["exit_code"] == 3
        assert result["stdout"] == "out\n"
        assert result["stderr"] == "err\n"
        assert 0 < result["duration"] < 5
        assert result["timed_out"] is False

    async def test_close_forgets_the_session(self, client: SidecarClient, session: str) -> None:
        await run(client, session, f"mkdir -p {session} && cd {session}")
        await client.request("close", session=session)
        assert (await run(client, session, "pwd"))["stdout"] == "/workspace\n"

    async def test_many_commands_at_once(self, client: SidecarClient, session: str) -> None:
        results: dict[int, dict[str, Any]] = {}

        async def one(i: int) -> None:
            async with SidecarClient(socket_path=client.socket_path) as own:
                results[i] = await run(own, f"{session}-{i}", f"sleep 0.5; echo {i}")

        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i in range(12):
                tg.start_soon(one, i)
        elapsed = time.monotonic() - started
        assert {i: r["stdout"] for i, r in results.items()} == {i: f"{i}\n" for i in range(12)}
        assert elapsed < 12 * 0.5  # they overlapped


class TestTimeouts:
    async def test_a_timeout_kills_the_whole_tree_and_keeps_partial_output(
        self, client: SidecarClient, session: str, daemon: Daemon
    ) -> None:
        marker = f"sleep 1000{session[-4:]}"  # a distinctive command line to look for
        command = f"echo before; bash -c 'exec -a \"{marker}\" sleep 1000' & sleep 1000"
        started = time.monotonic()
        result = await run(client, session, command, seconds=1)
        elapsed = time.monotonic() - started
        assert result["timed_out"] is True
        assert result["exit_code"] is None
        assert result["stdout"] == "before\n"
        assert elapsed < 5
        while processes_running(marker.encode()) or command_processes(daemon.pid):  # noqa: ASYNC110
            await anyio.sleep(0.02)

    async def test_a_background_child_dies_with_its_command(
        self, client: SidecarClient, session: str
    ) -> None:
        marker = f"bgchild{session[-6:]}"
        result = await run(client, session, f"bash -c 'exec -a {marker} sleep 1000' & echo started")
        assert result["stdout"] == "started\n"
        while processes_running(marker.encode()):  # noqa: ASYNC110 (processes, not events)
            await anyio.sleep(0.02)

    async def test_a_daemonised_grandchild_dies_too(
        self, client: SidecarClient, session: str
    ) -> None:
        marker = f"daemonised{session[-6:]}"
        command = f"setsid bash -c 'exec -a {marker} sleep 1000' < /dev/null > /dev/null 2>&1 &"
        await run(client, session, command + " sleep 0.2")
        while processes_running(marker.encode()):  # noqa: ASYNC110 (processes, not events)
            await anyio.sleep(0.02)


class TestLimits:
    async def test_an_output_flood_is_capped_and_counted(
        self, client: SidecarClient, session: str
    ) -> None:
        result = await run(
            client, session, "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo END"
        )
        assert result["exit_code"] == 0
        assert result["stdout_bytes"] == 20000000 + 5
        assert len(result["stdout"].encode()) < TEST_LIMITS.output_bytes + 200
        marker = "\n[output truncated — original size: 20,000,005 bytes]\n[shown: the first "
        assert marker in result["stdout"]
        assert result["stdout"].endswith("x\nEND\n")  # the tail is kept
        assert result["stdout"].startswith("xxxx")  # and the head

    async def test_a_stderr_flood_is_capped_too(self, client: SidecarClient, session: str) -> None:
        result = await run(client, session, "head -c 5000000 /dev/zero >&2")
        assert result["stderr_bytes"] == 5000000
        assert len(result["stderr"].encode()) < TEST_LIMITS.output_bytes + 200

    async def test_an_endless_flood_ends_at_its_timeout(
        self, client: SidecarClient, session: str
    ) -> None:
        result = await run(client, session, "yes", seconds=1)
        assert result["timed_out"] is True
        assert result["stdout_bytes"] > TEST_LIMITS.output_bytes
        assert result["stdout"].startswith("y\ny\n")

    async def test_a_fork_bomb_is_contained(
        self, client: SidecarClient, session: str, daemon: Daemon
    ) -> None:
        peak = 0
        done = anyio.Event()

        async def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, len(command_processes(daemon.pid)))
                await anyio.sleep(0.02)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            result = await run(
                client, session, "bomb() { bomb | bomb & }; bomb; sleep 5", seconds=3
            )
            done.set()
        assert result["timed_out"] is True
        # bwrap, its init and at most `processes` tasks of the command at any instant; a
        # scan of /proc is no snapshot (tasks exit and fork while it reads), so it may see up
        # to about twice that. An uncontained bomb reaches thousands.
        assert 10 < peak <= 2 * (TEST_LIMITS.processes + 4)
        while command_processes(daemon.pid):  # noqa: ASYNC110 (processes, not events of ours)
            await anyio.sleep(0.02)
        assert (await run(client, session, "echo still here"))["stdout"] == "still here\n"

    async def test_limits_are_applied(self, client: SidecarClient, session: str) -> None:
        result = await run(client, session, "ulimit -u; ulimit -t; ulimit -v; ulimit -f; ulimit -c")
        assert result["stdout"].split() == [
            str(TEST_LIMITS.processes),
            str(TEST_LIMITS.cpu_seconds),
            str(TEST_LIMITS.memory_bytes // 1024),
            str(TEST_LIMITS.file_bytes // 1024),
            "0",
        ]

    async def test_limits_cannot_be_raised(self, client: SidecarClient, session: str) -> None:
        result = await run(client, session, "ulimit -u 100000")
        assert result["exit_code"] != 0


class TestSandbox:
    async def test_a_file_outside_the_workspace_cannot_be_read(
        self, client: SidecarClient, session: str
    ) -> None:
        secret = plant_secret()
        secret_dir = secret.parent
        try:
            command = (
                f"cat {secret}; cat /proc/1/root{secret}; ls {secret_dir} /root /home; "
                "cat /etc/shadow; find / -name secret.txt 2>/dev/null; "
                f"cat {THIS_FILE}"
            )
            result = await run(client, session, command, seconds=30)
        finally:
            shutil.rmtree(secret_dir)
        assert "SENTINEL-SECRET" not in result["stdout"] + result["stderr"]
        assert "No such file or directory" in result["stderr"]

    async def test_the_host_etc_is_not_there(self, client: SidecarClient, session: str) -> None:
        result = await run(client, session, "ls /etc")
        names = set(result["stdout"].split())
        assert {"passwd", "group", "ld.so.cache"} <= names
        assert not names & {"shadow", "ssh", "sudoers", "hostname", "environment"}
        passwd = await run(client, session, "cat /etc/passwd; id -un")
        assert passwd["stdout"].endswith("sandbox\n")
        assert len(passwd["stdout"].splitlines()) == 4

    async def test_no_network_connection_gets_out(
        self, client: SidecarClient, session: str
    ) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        try:
            command = (
                f"echo hi > /dev/tcp/127.0.0.1/{port}; "
                f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED; "
                "getent hosts localhost; ls /sys/class/net"
            )
            result = await run(client, session, command)
            await anyio.sleep(0.2)
            with pytest.raises(BlockingIOError):
                listener.accept()
        finally:
            listener.close()
        assert "CONNECTED" not in result["stdout"]
        assert "Connection refused" in result["stderr"]

    async def test_the_system_is_read_only(self, client: SidecarClient, session: str) -> None:
        result = await run(client, session, "touch /usr/x || touch /bin/x || echo ro")
        assert result["stdout"] == "ro\n"
        assert "Read-only file system" in result["stderr"]

    async def test_the_workspace_is_read_write(
        self, client: SidecarClient, session: str, daemon: Daemon
    ) -> None:
        await run(client, session, f"echo written > {session}.txt")
        assert take_file(daemon.workspace / f"{session}.txt") == "written\n"

    async def test_tmp_is_private_and_fresh(self, client: SidecarClient, session: str) -> None:
        marker = f"/tmp/{session}"
        await run(client, session, f"echo x > {marker}")
        assert not os.path.lexists(marker)  # noqa: ASYNC240 - a quick local check
        again = await run(client, session, f"cat {marker}")
        assert again["exit_code"] != 0

    async def test_it_sees_only_its_own_processes(
        self, client: SidecarClient, session: str
    ) -> None:
        result = await run(client, session, "ls /proc | grep -c '^[0-9]'")
        assert int(result["stdout"]) <= 4

    async def test_it_cannot_make_namespaces_of_its_own(
        self, client: SidecarClient, session: str
    ) -> None:
        result = await run(client, session, "unshare -r id || echo refused")
        assert result["stdout"].strip().endswith("refused")


class TestBackgroundJobs:
    async def test_start_poll_and_finish(self, client: SidecarClient, session: str) -> None:
        started = await client.request(
            "exec", session=session, command="echo one; sleep 0.3; echo two", background=True
        )
        job = started["job"]
        seen = ""
        for _ in range(50):
            polled = await client.request("poll", session=session, job=job, wait=1)
            seen += polled["stdout"]
            if not polled["running"]:
                break
        assert seen == "one\ntwo\n"
        assert polled["exit_code"] == 0
        with pytest.raises(SidecarError, match="no_job"):  # forgotten once read to the end
            await client.request("poll", session=session, job=job)

    async def test_a_server_runs_until_killed(self, client: SidecarClient, session: str) -> None:
        marker = f"server{session[-6:]}"
        started = await client.request(
            "exec",
            session=session,
            command=f"echo listening; bash -c 'exec -a {marker} sleep 1000'",
            background=True,
        )
        polled = await client.request("poll", session=session, job=started["job"], wait=5)
        assert polled["stdout"] == "listening\n"
        assert polled["running"] is True
        assert processes_running(marker.encode())
        killed = await client.request("kill", session=session, job=started["job"])
        assert killed["exit_code"] == 128 + 9
        while processes_running(marker.encode()):  # noqa: ASYNC110 (processes, not events)
            await anyio.sleep(0.02)

    async def test_jobs_belong_to_their_session(self, client: SidecarClient, session: str) -> None:
        started = await client.request("exec", session=session, command="sleep 5", background=True)
        with pytest.raises(SidecarError, match="no_job"):
            await client.request("poll", session=session + "-x", job=started["job"])
        await client.request("close", session=session)  # closing kills its jobs
        with pytest.raises(SidecarError, match="no_job"):
            await client.request("poll", session=session, job=started["job"])


class TestDisconnect:
    async def test_a_dropped_connection_kills_its_command(
        self, client: SidecarClient, session: str
    ) -> None:
        marker = f"orphan{session[-6:]}"
        with anyio.move_on_after(0.5):
            await run(client, session, f"bash -c 'exec -a {marker} sleep 1000'", seconds=30)
        while processes_running(marker.encode()):  # noqa: ASYNC110 (processes, not events)
            await anyio.sleep(0.02)
        assert (await client.ping())["ok"]


class TestGitGuard:
    """The guard that stands in for git reads the config of the repository git will use."""

    SETUP = (
        "mkdir -p {d} && cd {d} && git init -q . && git init -q sub && "
        "printf '#!/bin/sh\\necho ran >> /workspace/{d}/RAN\\n' > /workspace/{d}/mark.sh && "
        "chmod +x mark.sh && "
        "printf '[diff \"x\"]\\n\\ttextconv = /workspace/{d}/mark.sh\\n' >> sub/.git/config && "
        "printf '* diff=x\\n' > sub/.gitattributes && echo a > sub/f && "
        "git -C sub add -A && git -C sub -c user.name=a -c user.email=b@c commit -qm a; "
        "echo b > sub/f"
    )

    @pytest.mark.parametrize(
        "command",
        ["git -C sub diff", "git --git-dir=sub/.git --work-tree=sub diff", "git -C sub log -p"],
    )
    async def test_options_naming_another_repository_are_followed(
        self, client: SidecarClient, session: str, daemon: Daemon, command: str
    ) -> None:
        directory = f"guard-{session}"
        await run(client, session, self.SETUP.format(d=directory), seconds=30)
        result = await run(client, session, command, seconds=30)
        assert result["exit_code"] == 126, result
        assert "config sets 'diff.x.textconv'" in result["stderr"]
        assert not (daemon.workspace / directory / "RAN").exists()

    @pytest.mark.parametrize(
        "command",
        [
            "git-upload-pack .", "git-receive-pack .", "git-upload-archive .",
            "git upload-pack .", "git receive-pack .", "git -c x.y=1 receive-pack .",
            "/usr/lib/git-core/git-receive-pack .",
        ],
    )  # fmt: skip
    async def test_the_serving_side_of_a_transport_never_runs(
        self, client: SidecarClient, session: str, command: str
    ) -> None:
        result = await run(
            client, session, f"git init -q r-{session} && cd r-{session} && {command}"
        )
        assert result["exit_code"] == 126, result
        assert "serves another repository" in result["stderr"]

    @pytest.mark.parametrize(
        "remote", ["../bare.git", "/workspace/{d}/bare.git", "file:///workspace/{d}/bare.git"]
    )
    async def test_local_transports_are_refused(
        self, client: SidecarClient, session: str, remote: str
    ) -> None:
        directory = f"transport-{session}"
        setup = (
            f"mkdir -p {directory} && cd {directory} && git init -q --bare bare.git && "
            "git init -q work && cd work && git -c user.name=a -c user.email=b@c "
            "commit -q --allow-empty -m a"
        )
        await run(client, session, setup, seconds=30)
        for command in (
            f"git push -q {remote.format(d=directory)} HEAD:refs/heads/x",
            f"git fetch -q {remote.format(d=directory)}",
            f"git clone -q {remote.format(d=directory)} ../copy",
        ):
            result = await run(client, session, command, seconds=30)
            assert result["exit_code"] != 0, (command, result)
            assert "transport 'file' not allowed" in result["stderr"], (command, result)
