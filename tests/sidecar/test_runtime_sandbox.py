"""The sandbox as shell_exec users meet it: its staged /etc, and who its commands are."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import ToolcageConfig
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime
from toolcage.runtime.shell import ShellExecTool

from .conftest import make_workspace

pytestmark = pytest.mark.anyio

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="commands change uid only under root")


def config_for(workspace: Path, **shell: Any) -> ToolcageConfig:
    return parse_config(
        {
            "shell": {"workspace": str(workspace), **shell},
            "approval": {"auto_approve": ["shell_exec"]},
        },
        base_dir=workspace.parent,
    )


async def shell(runtime: Runtime, command: str) -> str:
    result = await runtime.execute("shell_exec", {"command": command})
    assert not result.is_error, result.envelope()
    assert result.envelope()["details"]["exit_code"] == 0, result.envelope()
    return result.output_text


def etc_source(mountinfo: str) -> Path:
    """The host directory mounted on the sandbox's /etc, from its mount table."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] == "/etc":
            return Path(fields[3])
    raise AssertionError(f"no /etc mount in:\n{mountinfo}")


def daemon_pid(runtime: Runtime) -> int:
    tool = runtime.registry.get("shell_exec")
    assert isinstance(tool, ShellExecTool)
    assert tool.sidecar is not None
    assert tool.sidecar.client.launcher is not None
    pid = tool.sidecar.client.launcher.pid
    assert pid is not None
    return pid


async def test_etc_is_one_staged_read_only_directory_removed_with_the_sidecar() -> None:
    async with Runtime.from_config(config_for(make_workspace())) as runtime:
        staged = etc_source(await shell(runtime, "cat /proc/self/mountinfo"))
        assert staged.name == "etc"
        assert staged.parent.name.startswith("toolcage-sandbox-")
        assert {"passwd", "group", "ld.so.cache"} <= set(os.listdir(staged))
        passwd = await shell(runtime, "cat /etc/passwd")
        assert (staged / "passwd").read_text().splitlines()[1] in passwd
        before = (staged / "passwd").read_bytes()
        for command in ("touch /etc/passwd", "touch /etc/new"):
            refused = await runtime.execute("shell_exec", {"command": command})
            assert refused.envelope()["details"]["exit_code"] != 0, command
        assert (staged / "passwd").read_bytes() == before
        assert not (staged / "new").exists()
    while staged.parent.exists():  # noqa: ASYNC110 - the daemon removes it as it stops
        await anyio.sleep(0.05)


@root_only
async def test_commands_run_as_the_sandbox_uid_and_the_sidecar_stays_root() -> None:
    workspace = make_workspace()
    groups = os.getgroups()
    os.setgroups([*groups, 4242])  # a supplementary group the sidecar inherits
    try:
        await _check_identities(workspace)
    finally:
        os.setgroups(groups)


async def _check_identities(workspace: Path) -> None:
    async with Runtime.from_config(config_for(workspace)) as runtime:
        await shell(runtime, "true")  # the sidecar starts on first use
        daemon_groups = await anyio.Path(f"/proc/{daemon_pid(runtime)}/status").read_text()
        assert "4242" in next(x for x in daemon_groups.splitlines() if x.startswith("Groups:"))
        for i in range(3):
            status = await shell(runtime, f"touch made-{i}; cat /proc/self/status")
            groups = next(line for line in status.splitlines() if line.startswith("Groups:"))
            assert groups.split(":")[1].strip() == ""  # none of the sidecar's groups
            made = (workspace / f"made-{i}").stat()
            assert (made.st_uid, made.st_gid) == (65534, 65534)
            daemon = await anyio.Path(f"/proc/{daemon_pid(runtime)}/status").read_text()
            ids = [line.split()[1:] for line in daemon.splitlines() if line[:4] in ("Uid:", "Gid:")]
            assert ids == [["0", "0", "0", "0"], ["0", "0", "0", "0"]]


async def test_exported_values_reach_the_next_command_exactly() -> None:
    config = config_for(make_workspace(), syntax={"expansions": True})
    async with Runtime.from_config(config) as runtime:
        await shell(runtime, "export QUOTED='a \"b\" $c `d` \\e' LINES='one\ntwo\n' WIDE='é ☃'")
        output = await shell(runtime, 'echo "[$QUOTED|$LINES|$WIDE]"')
        assert output.startswith('[a "b" $c `d` \\e|one\ntwo\n|é ☃]\n')


async def test_the_staged_files_of_a_killed_sidecar_go_at_the_next_start() -> None:
    async with Runtime.from_config(config_for(make_workspace())) as runtime:
        first = etc_source(await shell(runtime, "cat /proc/self/mountinfo")).parent
        pid = daemon_pid(runtime)
        os.kill(pid, signal.SIGKILL)  # it cannot clean up after itself
        while await _alive(pid):  # noqa: ASYNC110 - another process's state, polled
            await anyio.sleep(0.01)
        assert first.exists()
        # the call that finds the sidecar gone may be lost; the sidecar is started again
        await runtime.execute("shell_exec", {"command": "true"})
        second = etc_source(await shell(runtime, "cat /proc/self/mountinfo")).parent
        assert second != first
        assert not first.exists()  # removed before the new sidecar said it was ready
        assert second.exists()


async def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie does not)."""
    try:
        stat = await anyio.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def test_the_sidecar_starts_commands_from_its_only_thread() -> None:
    # Each command starts with a switch of the sidecar's uids, which glibc applies to every
    # thread of the process by interrupting it: the sidecar keeps no thread besides its own.
    workspace = make_workspace()
    async with Runtime.from_config(config_for(workspace)) as runtime:
        assert (await shell(runtime, "echo one")).startswith("one")
        pid = daemon_pid(runtime)
        assert os.listdir(f"/proc/{pid}/task") == [str(pid)]
        assert (await shell(runtime, "echo two")).startswith("two")
        assert os.listdir(f"/proc/{pid}/task") == [str(pid)]


async def test_a_command_repeated_gets_the_same_verdict_each_time() -> None:
    workspace = make_workspace()
    async with Runtime.from_config(config_for(workspace)) as runtime:
        refusals = [
            await runtime.execute("shell_exec", {"command": "curl http://127.0.0.1/"})
            for _ in range(3)
        ]
        for _ in range(3):
            await shell(runtime, "echo x >> runs.txt")
    assert [r.envelope()["error_type"] for r in refusals] == ["permission_denied"] * 3
    assert len({r.output_text for r in refusals}) == 1
    assert (workspace / "runs.txt").read_text() == "x\n" * 3
