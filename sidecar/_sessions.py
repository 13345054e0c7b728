"""A sandbox per shell session: one bubblewrap whose runner forks each command inside it.

Starting a bubblewrap costs a command some 4-5 ms here, most of it the mounts. A session
that keeps one sandbox across its commands pays that once; each command is then forked
by the sandbox's runner (``runner/runner.c``, whose header gives the protocol) into
namespaces of its own -- PID, mount, IPC and user -- with a fresh ``/tmp`` and ``/proc``
and no capability, so that it keeps every guarantee a bubblewrap of its own gave it:

- every process it started dies with it (when bash exits, or at its deadline when the
  sidecar asks the runner), whatever it did to escape -- its PID namespace ends;
- it sees only its own ``/tmp`` and its own processes, and can signal neither the
  runner nor another command;
- it gets no capability and can make no namespace;
- ``RLIMIT_NPROC`` counts only its own processes (each command is a user namespace).

A session's sandbox binds its owner's workspace (sessions are kept per owner and name,
:mod:`._service`), so two owners -- or two principals, whose session names differ --
never share one. It ends when the session is closed or forgotten, after
:data:`IDLE_SECONDS` unused, when the sidecar stops (and, through ``--die-with-parent``
and the end of its socket, when the sidecar dies). A sandbox that fails -- its runner
gone, a message it does not take -- is killed, and the session's next command starts a
new one.

Background jobs still get a bubblewrap of their own (:mod:`._service`): they outlive the
call that started them, and a sandbox per job keeps the session's sandbox out of their way.
Without a built runner every command does.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from ._child import _acting_as
from ._sandbox import BubblewrapSandbox

IDLE_SECONDS = 300.0
"""A session's sandbox unused this long is ended (its next command starts a new one)."""
MOST_SANDBOXES = 64
"""Beyond this many live session sandboxes, the least recently used idle one is ended."""
SEND_SECONDS = 10.0
"""How long the runner may take to accept a command before its sandbox counts as broken."""
_STATUS = struct.Struct("=i")
_LENGTH = struct.Struct("=I")


class RunnerError(OSError):
    """A session's sandbox could not take a command."""


class SessionCommand:
    """A command started by a session's runner (a :class:`._child.Process`)."""

    def __init__(self, box: SessionBox, control: socket.socket, stdout: int, stderr: int) -> None:
        self._box = box
        self._control = control
        self.stdout = stdout
        self.stderr = stderr
        self._returncode: int | None = None

    @property
    def pidfd(self) -> int:
        """The control socket: readable once the runner wrote the status (or is gone)."""
        return self._control.fileno()

    @property
    def returncode(self) -> int | None:
        return self._returncode

    def reap(self) -> bool:
        if self._returncode is not None:
            return True
        try:
            data = self._control.recv(_STATUS.size, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        self._box.running -= 1
        if len(data) == _STATUS.size:
            status = _STATUS.unpack(data)[0]
            self._returncode = os.waitstatus_to_exitcode(status)
        else:  # the runner went away without a status: the sandbox is broken
            self._box.broken = True
            self._box.kill()
            self._returncode = -9
        return True

    async def wait(self) -> int | None:
        while not self.reap():
            await anyio.wait_readable(self._control)
        return self._returncode

    def kill(self) -> None:
        """Ask the runner to kill the command (its PID namespace ends with its init)."""
        if self._returncode is None:
            with contextlib.suppress(OSError):
                self._control.send(b"k", socket.MSG_DONTWAIT)

    def close(self) -> None:
        for fd in (self.stdout, self.stderr):
            if fd >= 0:
                os.close(fd)
        self.stdout = self.stderr = -1
        self._control.close()


class SessionBox:
    """One session's bubblewrap and the socket to its runner."""

    def __init__(self, sandbox: BubblewrapSandbox, workspace: Path | None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            spawn = sandbox.session_spawn(theirs.fileno(), workspace)
            with _acting_as(spawn.user, spawn.group):
                self.process = subprocess.Popen(  # noqa: S603 - built by the sandbox
                    spawn.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=spawn.env,
                    start_new_session=True,
                    pass_fds=spawn.pass_fds,
                )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(SEND_SECONDS)
        self.socket = ours
        self.broken = False
        self.running = 0
        self.used = time.monotonic()

    @property
    def alive(self) -> bool:
        return not self.broken and self.process.poll() is None

    def send(self, argv: list[str], env: Mapping[str, str], fds: list[int]) -> None:
        """Hand the runner one command (argv, environment, and its four descriptors)."""
        payload = b"".join(part.encode() + b"\0" for part in argv) + b"\0"
        payload += b"".join(f"{key}={value}".encode() + b"\0" for key, value in env.items())
        try:
            sent = socket.send_fds(self.socket, [_LENGTH.pack(len(payload))], fds)
            if sent != _LENGTH.size:
                raise RunnerError("the runner took part of a command's header")
            self.socket.sendall(payload)
        except OSError as exc:
            self.broken = True
            self.kill()
            raise RunnerError(f"the session's sandbox did not take the command: {exc}") from exc

    def kill(self) -> None:
        """End the sandbox: its runner, and with it every command still running in it."""
        self.broken = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, 9)
        self.socket.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=0)


class SessionSandboxes:
    """The live session sandboxes, by session key (see the module docstring)."""

    def __init__(self, sandbox: BubblewrapSandbox) -> None:
        self.sandbox = sandbox
        self.boxes: dict[Any, SessionBox] = {}
        """In order of last use."""
        self._dead: list[SessionBox] = []

    def start(
        self,
        key: object,
        workspace: Path | None,
        argv: list[str],
        env: Mapping[str, str],
        report_fd: int,
    ) -> SessionCommand:
        """Start ``argv`` in ``key``'s sandbox (started first when there is none, or when
        the last one broke); ``report_fd``, the write end of its report pipe, is closed."""
        self.sweep()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        fds = [theirs.fileno(), out_write, err_write, report_fd]
        try:
            box = self._box(key, workspace)
            try:
                box.send(argv, env, fds)
            except RunnerError:  # a sandbox that just broke: one more try in a new one
                box = self._box(key, workspace)
                box.send(argv, env, fds)
        except BaseException:
            ours.close()
            os.close(out_read)
            os.close(err_read)
            raise
        finally:
            theirs.close()
            for fd in (out_write, err_write, report_fd):
                os.close(fd)
        os.set_blocking(out_read, False)
        os.set_blocking(err_read, False)
        box.used = time.monotonic()
        box.running += 1
        return SessionCommand(box, ours, out_read, err_read)

    def _box(self, key: object, workspace: Path | None) -> SessionBox:
        box = self.boxes.pop(key, None)
        if box is not None and not box.alive:
            self._end(box)
            box = None
        if box is None:
            box = SessionBox(self.sandbox, workspace)
        self.boxes[key] = box
        return box

    def close(self, key: object) -> None:
        """End ``key``'s sandbox, if it has one."""
        box = self.boxes.pop(key, None)
        if box is not None:
            self._end(box)

    async def sweep_idle(self) -> None:
        """End idle sandboxes now and then, for as long as the sidecar serves."""
        while True:
            await anyio.sleep(IDLE_SECONDS / 4)
            self.sweep()

    def close_all(self) -> None:
        for key in list(self.boxes):
            self.close(key)
        for box in self._dead:
            with contextlib.suppress(subprocess.TimeoutExpired):
                box.process.wait(timeout=1)
        self._dead.clear()

    def _end(self, box: SessionBox) -> None:
        box.kill()
        if box.process.returncode is None:
            self._dead.append(box)  # reaped by a later sweep

    def sweep(self) -> None:
        """End idle sandboxes past :data:`IDLE_SECONDS` or :data:`MOST_SANDBOXES`, and
        reap ended ones."""
        self._dead = [box for box in self._dead if box.process.poll() is None]
        now = time.monotonic()
        for key, box in list(self.boxes.items()):
            if box.running:
                continue
            if now - box.used > IDLE_SECONDS or len(self.boxes) > MOST_SANDBOXES:
                self.close(key)
            else:
                break  # the rest were used later
