"""The embedded default config as root, in a fresh private directory (``mktemp -d``: 0700).

A root sidecar runs commands as ``shell.sandbox_uid`` (65534). It gives that uid ACL
entries on the workspace -- so commands and the file tools edit each other's files -- and
reaches a workspace beneath a directory only root may enter through a bind in a mount
namespace of its own, never changing that directory's mode. These tests go through the
CLI as a new user would (``toolcage check``, ``toolcage call``) and through
``Runtime.from_config`` + ``execute``; the ACL entries are checked with a process that
really runs as the sandbox uid.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, ToolResult
from toolcage.sidecar._grant import grant_workspace
from toolcage.sidecar._passage import PREFIX

from ..runtime.cli.test_cli import toolcage

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox uid differs only under root"),
]
SANDBOX_UID = 65534


@pytest.fixture
def private_dir() -> Iterator[Path]:
    """A fresh directory as ``mktemp -d`` makes it: mode 0700, root's."""
    directory = Path(tempfile.mkdtemp(prefix="toolcage-root-"))
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def passages() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith(PREFIX)}


def call(directory: Path, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    done = toolcage("call", "--approve", name, json.dumps(arguments), cwd=directory)
    assert "Traceback" not in done.stderr, done.stderr
    envelope: dict[str, Any] = json.loads(done.stdout)
    return envelope


def shell(directory: Path, command: str) -> str:
    envelope = call(directory, "shell_exec", {"command": command})
    assert envelope["status"] == "success", envelope
    assert envelope["details"]["exit_code"] == 0, envelope
    return str(envelope["result"]).rpartition("\n[exit code")[0]


class TestTheQuickStartAsRoot:
    def test_check_is_green_and_the_directory_keeps_its_mode(self, private_dir: Path) -> None:
        before = passages()
        done = toolcage("check", cwd=private_dir)
        assert done.returncode == 0, done.stdout + done.stderr
        lines = {line.split()[1]: line for line in done.stdout.splitlines()}
        assert lines["sidecar"].startswith("ok"), done.stdout
        assert lines["workspace"].startswith("ok"), done.stdout
        assert f"uid {SANDBOX_UID} can write" in lines["workspace"]
        assert stat.S_IMODE(private_dir.stat().st_mode) == 0o700
        assert passages() == before

    def test_the_shell_and_the_file_tools_share_the_workspace(self, private_dir: Path) -> None:
        workspace = private_dir / "workspace"
        assert shell(private_dir, "echo hi > note.txt && cat note.txt") == "hi"
        assert (workspace / "note.txt").stat().st_uid == SANDBOX_UID
        read = call(private_dir, "file_read", {"path": "/workspace/note.txt"})
        assert read["result"] == "hi\n", read
        written = call(private_dir, "file_write", {"path": "/workspace/a.txt", "content": "one\n"})
        assert written["status"] == "success", written
        assert (workspace / "a.txt").stat().st_uid == 0  # the file tools run as root
        assert shell(private_dir, "echo two >> a.txt && cat a.txt") == "one\ntwo"
        assert shell(private_dir, "rm note.txt a.txt && ls -A") == ""
        assert not any(workspace.iterdir())
        assert stat.S_IMODE(private_dir.stat().st_mode) == 0o700

    def test_a_refusal_by_the_kernel_names_the_command_line(self, private_dir: Path) -> None:
        envelope = call(private_dir, "shell_exec", {"command": "true\necho hi > missing/x"})
        assert envelope["details"]["exit_code"] == 1, envelope
        assert "bash: line 2: missing/x: No such file or directory" in envelope["result"]
        assert "toolcage: line" not in envelope["result"]


@pytest.fixture
async def runtime(private_dir: Path) -> AsyncIterator[Runtime]:
    config = parse_config({"approval": {"auto_approve": ["shell_exec"]}}, base_dir=private_dir)
    async with Runtime.from_config(config) as running:
        yield running


async def run(runtime: Runtime, command: str) -> ToolResult:
    result = await runtime.execute("shell_exec", {"command": command})
    assert not result.is_error, result.envelope()
    return result


class TestTheDefaultConfigThroughTheRuntime:
    async def test_commands_never_run_as_root(self, runtime: Runtime, private_dir: Path) -> None:
        result = await run(runtime, "id -u > uid.txt && mkdir made && touch made/x")
        assert result.details["exit_code"] == 0, result.output_text
        workspace = private_dir / "workspace"
        for made in ("uid.txt", "made", "made/x"):
            assert (workspace / made).stat().st_uid == SANDBOX_UID
        assert (workspace / "uid.txt").read_text() == "1000\n"  # the uid inside the sandbox

    async def test_the_bind_stays_inside_the_sidecar(
        self, runtime: Runtime, private_dir: Path
    ) -> None:
        before = passages()
        await run(runtime, "true")
        mounts = await anyio.Path("/proc/self/mountinfo").read_text()
        assert str(private_dir) not in mounts  # the bind is the sidecar's alone
        await runtime.aclose()
        assert passages() <= before

    async def test_file_tools_and_commands_edit_each_others_files(
        self, runtime: Runtime, private_dir: Path
    ) -> None:
        write = {"path": "/workspace/d/f.txt", "content": "a\n", "create_parents": True}
        assert not (await runtime.execute("file_write", write)).is_error
        await run(runtime, "echo b >> d/f.txt && touch d/g.txt && rm d/f.txt && mkdir d/e")
        listed = await runtime.execute("file_list", {"path": "/workspace/d"})
        assert "g.txt" in listed.output_text
        assert "f.txt" not in listed.output_text
        edit = {"path": "/workspace/d/g.txt", "content": "from the file tool\n"}
        assert not (await runtime.execute("file_write", edit)).is_error, "tools edit theirs"


class TestTheAclEntries:
    """As the sandbox uid itself: what the entries grant, on a directory it may reach."""

    @pytest.fixture
    def granted(self) -> Iterator[Path]:
        parent = Path(tempfile.mkdtemp(prefix="toolcage-acl-"))
        parent.chmod(0o711)
        workspace = parent / "workspace"
        workspace.mkdir(mode=0o755)
        grant_workspace(workspace, SANDBOX_UID)
        yield workspace
        shutil.rmtree(parent, ignore_errors=True)

    @staticmethod
    def as_sandbox(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["/bin/bash", "-c", command],
            cwd=cwd,
            user=SANDBOX_UID,
            group=SANDBOX_UID,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )

    def test_the_sandbox_uid_writes_what_root_creates_later(self, granted: Path) -> None:
        (granted / "by-root.txt").write_text("root\n")
        (granted / "sub").mkdir()
        done = self.as_sandbox("echo more >> by-root.txt && touch sub/x && rm by-root.txt", granted)
        assert done.returncode == 0, done.stderr
        assert (granted / "sub" / "x").exists()

    def test_the_owner_and_the_others_keep_their_bits(self, granted: Path) -> None:
        info = granted.stat()
        assert (info.st_uid, info.st_mode & 0o7) == (0, 0o5)
        (granted / "f").write_text("x")
        assert stat.S_IMODE((granted / "f").stat().st_mode) & 0o7 == 0o4  # others still read
        done = subprocess.run(
            ["/bin/bash", "-c", "echo x >> f"],
            cwd=granted,
            user=12345,
            group=12345,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert done.returncode != 0  # another uid gets nothing new
