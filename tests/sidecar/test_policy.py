"""The daemon checks every command itself: a raw client on its socket meets the shell policy.

The client here is any process of the daemon's user that reaches the socket and speaks the
frame protocol directly -- no runtime in front, so no check but the daemon's own.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ShellConfig
from toolcage.sidecar import POLICY_REFUSED, SidecarError
from toolcage.sidecar._protocol import encode_frame

from .conftest import (
    TEST_LIMITS,
    Daemon,
    give_to_sandbox,
    make_workspace,
    read_frame,
    scratch,
    start_daemon,
    stop_daemon,
)

pytestmark = pytest.mark.anyio

SENTINEL = "#!/bin/sh\necho ran >> /workspace/SENTINEL_RAN\n"


@pytest.fixture(scope="module")
def checked() -> Iterator[Daemon]:
    """A daemon with the default ``[shell]`` section, and a sentinel in its workspace."""
    workspace = make_workspace()
    (workspace / "sentinel.sh").write_text(SENTINEL)
    (workspace / "sentinel.sh").chmod(0o755)
    give_to_sandbox(workspace)
    running = start_daemon(ShellConfig(workspace=workspace, limits=TEST_LIMITS))
    yield running
    stop_daemon(running)
    shutil.rmtree(workspace.parent, ignore_errors=True)


def send(daemon: Daemon, op: str, **fields: Any) -> dict[str, Any]:
    """One request in frames on the socket; its response."""
    with daemon.handshake() as sock:
        sock.sendall(encode_frame({"id": 1, "op": op, **fields}))
        reply = read_frame(sock)
    assert reply is not None
    return reply


def exec_raw(daemon: Daemon, command: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("session", "raw-" + uuid.uuid4().hex[:6])
    return send(daemon, "exec", command=command, timeout=30, **fields)


REFUSED = {
    "./sentinel.sh": "'./sentinel.sh'",
    "ls; ./sentinel.sh": "'./sentinel.sh'",
    "echo ok && /workspace/sentinel.sh": "'/workspace/sentinel.sh'",
    "echo $(./sentinel.sh)": "substitution",
    "sh sentinel.sh": "'sh'",
    "env ./sentinel.sh": "'./sentinel.sh'",
    "PATH=/workspace sentinel.sh": "PATH",
    "export BASH_ENV=/workspace/sentinel.sh": "BASH_ENV",
    "find . -exec ./sentinel.sh ;": "-exec",
    "git -c core.pager=./sentinel.sh log": "'-c'",
    "cat sentinel.sh | bash": "'bash'",
    "ls > /etc/x": "redirections must stay inside /workspace",
    "echo $[1+1]": "only the $((...)) form of arithmetic",
}


class TestARawClient:
    def test_an_allowed_command_runs(self, checked: Daemon) -> None:
        reply = exec_raw(checked, "echo hi && pwd")
        assert reply["ok"] is True, reply
        assert reply["stdout"] == "hi\n/workspace\n"

    @pytest.mark.parametrize(("command", "named"), REFUSED.items())
    def test_a_refused_command_is_a_policy_error_and_runs_nothing(
        self, checked: Daemon, command: str, named: str
    ) -> None:
        for background in (False, True):
            reply = exec_raw(checked, command, background=background)
            assert reply["ok"] is False, reply
            assert reply["error"]["code"] == POLICY_REFUSED
            assert named in reply["error"]["message"]
        assert not (checked.workspace / "SENTINEL_RAN").exists()

    def test_env_and_cwd_fields_in_a_request_change_nothing(self, checked: Daemon) -> None:
        reply = exec_raw(
            checked,
            'pwd; echo "[$BASH_ENV][$LD_PRELOAD]"',
            cwd="/etc",
            env={"BASH_ENV": "/workspace/sentinel.sh", "LD_PRELOAD": "/workspace/x.so"},
            environment={"BASH_ENV": "/workspace/sentinel.sh"},
        )
        assert reply["ok"] is False  # expansions are off: the policy refuses the echo
        assert reply["error"]["code"] == POLICY_REFUSED
        reply = exec_raw(checked, "pwd && printenv", cwd="/etc", env={"BASH_ENV": "/x"})
        assert reply["stdout"].startswith("/workspace\n")
        assert "BASH_ENV" not in reply["stdout"]
        assert not (checked.workspace / "SENTINEL_RAN").exists()

    @pytest.mark.parametrize("op", ["env", "setenv", "chdir", "cd", "run", "spawn", "eval"])
    def test_there_is_no_other_way_to_run_or_set_anything(self, checked: Daemon, op: str) -> None:
        reply = send(checked, op, session="s", command="./sentinel.sh", name="BASH_ENV")
        assert reply["error"]["code"] == "unknown_op"

    def test_a_refused_command_leaves_the_session_as_it_was(self, checked: Daemon) -> None:
        session = "kept-" + uuid.uuid4().hex[:6]
        exec_raw(checked, "mkdir -p kept && cd kept && export MODE=one", session=session)
        refused = exec_raw(checked, "cd / ; export BASH_ENV=/x ; ./sentinel.sh", session=session)
        assert refused["error"]["code"] == POLICY_REFUSED
        after = exec_raw(checked, "pwd && printenv MODE", session=session)
        assert after["stdout"] == "/workspace/kept\none\n"

    async def test_the_client_library_sees_the_policy_code(self, checked: Daemon) -> None:
        async with checked.client() as client:
            with pytest.raises(SidecarError) as info:
                await client.request("exec", session="lib", command="./sentinel.sh", timeout=5)
        assert info.value.code == POLICY_REFUSED


class TestThePolicyComesFromTheOperator:
    def test_a_config_file_sets_the_policy(self, tmp_path: Path) -> None:
        """``toolcage sidecar --config FILE``: the file's ``[shell]`` section is enforced."""
        workspace = make_workspace()
        config = tmp_path / "toolcage.toml"
        config.write_text(f'[shell]\nworkspace = "{workspace}"\nallow = ["echo"]\n')
        socket_path = scratch("sock-") / "shell.sock"
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "toolcage.sidecar", "--socket", str(socket_path)),
                *("--config", str(config), "--exit-with-stdin"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdout is not None
        daemon = Daemon(socket_path, workspace, process, tmp_path / "unused.log")
        try:
            assert process.stdout.readline().strip() == b"ready"
            assert exec_raw(daemon, "echo fine")["stdout"] == "fine\n"
            refused = exec_raw(daemon, "ls")
            assert refused["error"]["code"] == POLICY_REFUSED
            assert "not in the allowlist" in refused["error"]["message"]
        finally:
            process.stdout.close()
            stop_daemon(daemon)
            shutil.rmtree(workspace.parent, ignore_errors=True)
