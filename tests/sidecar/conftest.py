"""A real shell daemon on a real socket, and workspaces it can write to."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ShellConfig, ShellLimits
from toolcage.sidecar import SidecarClient
from toolcage.sidecar._protocol import encode_frame, hello

SANDBOX_UID = 65534 if os.geteuid() == 0 else os.getuid()
"""The host uid sandboxed commands run as (the sidecar drops root to nobody)."""

TEST_LIMITS = ShellLimits(processes=64, output_bytes=64 * 1024, max_timeout=60)

_SCRATCH = Path(tempfile.mkdtemp(prefix="toolcage-tests-"))
_SCRATCH.chmod(0o711)  # the sandbox uid must be able to reach the workspaces inside
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def scratch(prefix: str) -> Path:
    """A fresh private directory, removed when the test run ends."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=_SCRATCH))


def make_workspace() -> Path:
    """A workspace under /tmp that the sandbox uid can reach and write."""
    base = scratch("workspace-")
    base.chmod(0o711)
    workspace = base / "workspace"
    workspace.mkdir()
    give_to_sandbox(workspace)
    return workspace


def give_to_sandbox(path: Path) -> None:
    if os.geteuid() == 0:
        for root, dirs, files in os.walk(path):
            os.chown(root, SANDBOX_UID, SANDBOX_UID)
            for name in dirs + files:
                os.lchown(os.path.join(root, name), SANDBOX_UID, SANDBOX_UID)


@dataclass
class Daemon:
    socket_path: Path
    workspace: Path
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def client(self) -> SidecarClient:
        return SidecarClient(socket_path=self.socket_path)

    def connect(self) -> socket.socket:
        """A raw connection (no handshake yet)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(str(self.socket_path))
        return sock

    def handshake(self) -> socket.socket:
        sock = self.connect()
        sock.sendall(encode_frame(hello()))
        reply = read_frame(sock)
        assert reply is not None
        assert reply["type"] == "hello"
        return sock


def start_daemon(config: ShellConfig, *, extra_args: tuple[str, ...] = ()) -> Daemon:
    directory = scratch("sock-")
    socket_path = directory / "shell.sock"
    log = directory / "sidecar.log"
    with open(log, "wb") as stderr:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "toolcage.sidecar", "--socket", str(socket_path)),
                *("--config-stdin", "--exit-with-stdin", *extra_args),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.write(config.model_dump_json().encode() + b"\n")
    process.stdin.flush()
    line = process.stdout.readline()
    process.stdout.close()
    if line.strip() != b"ready":
        process.wait()
        raise RuntimeError(f"the sidecar did not start: {log.read_text()}")
    return Daemon(socket_path, config.workspace, process, log)


def stop_daemon(daemon: Daemon) -> None:
    if daemon.process.stdin is not None:
        daemon.process.stdin.close()
    try:
        daemon.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        daemon.process.kill()
        daemon.process.wait()
    shutil.rmtree(daemon.socket_path.parent, ignore_errors=True)


UNCHECKED = ("--unsafe-skip-policy",)
"""Start the daemon without its shell policy: the sandbox's own tests send it anything."""


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    """A daemon that checks no policy, for tests of the sandbox and the protocol alone."""
    workspace = make_workspace()
    running = start_daemon(
        ShellConfig(workspace=workspace, limits=TEST_LIMITS), extra_args=UNCHECKED
    )
    yield running
    stop_daemon(running)
    shutil.rmtree(workspace.parent, ignore_errors=True)


def read_frame(sock: socket.socket) -> dict[str, Any] | None:
    """One frame from a raw socket; ``None`` at end of stream."""
    header = _read_exactly(sock, 4)
    if header is None:
        return None
    (length,) = struct.unpack(">I", header)
    body = _read_exactly(sock, length)
    if body is None:
        return None
    import json

    result: dict[str, Any] = json.loads(body)
    return result


def _read_exactly(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except ConnectionResetError:  # closed with our unread bytes still in its buffer
            return None
        if not chunk:
            return None
        data += chunk
    return data


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (through /proc/PID/task/TID/children)."""
    found: set[int] = set()
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except FileNotFoundError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{current}/task/{tid}/children") as handle:
                    children = [int(c) for c in handle.read().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
            for child in children:
                if child not in found:
                    found.add(child)
                    stack.append(child)
    return found


SESSION_RUNNER = b"/run/toolcage/runner\0"


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return 0


def session_runners(pid: int) -> set[int]:
    """The session runners below ``pid`` (a command's init is a fork of its runner, with
    its command line, and a child of it: those are left out)."""
    return {
        child
        for child in descendants(pid)
        if _cmdline(child).startswith(SESSION_RUNNER)
        and not _cmdline(_parent(child)).startswith(SESSION_RUNNER)
    }


def command_processes(pid: int) -> set[int]:
    """The processes below the daemon ``pid`` that belong to commands: all but the
    session sandboxes kept between commands (each runner and the two bubblewrap
    processes above it)."""
    kept = session_runners(pid)
    kept |= {_parent(runner) for runner in kept}
    kept |= {_parent(inner) for inner in kept}
    return descendants(pid) - kept


def processes_running(needle: bytes) -> list[int]:
    """Pids whose command line contains ``needle`` (NUL-separated argv)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if needle in handle.read():
                    pids.append(int(entry))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return pids
