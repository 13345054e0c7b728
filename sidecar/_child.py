"""Starting a command's process cheaply, as the sandbox uid, and awaiting it through a pidfd.

``subprocess`` starts a child with ``vfork`` unless asked to change its uid, groups or to
run a ``preexec_fn``; then it must ``fork``, which copies the sidecar's page tables and
makes the sidecar fault on every page it touches until the child has exec'd -- some 2 ms
per command here. A root sidecar's commands run as ``sandbox_uid``, so rather than asking
``subprocess`` for the change, :func:`spawn_child` makes it around one synchronous
``Popen`` call: with no supplementary groups, real and effective ids the sandbox uid and
root kept only as the saved uid, ``vfork`` + ``exec`` gives bwrap nothing but the sandbox
uid (``exec`` sets the saved uid to the effective one; a non-root uid keeps no
capabilities), and the sidecar takes its ids back as soon as ``Popen`` returns. The change
holds for the whole process but only for that call, which never yields to the event
loop: nothing else of the sidecar runs meanwhile. glibc applies each id change to every
thread by interrupting it and waiting for it, six times per command, so the sidecar keeps
no thread besides its event loop's (:func:`._server.listen_unix` binds the socket on it).

The sidecar awaits the child's exit on a pidfd instead of a thread per child, and reads
its pipes from the event loop (:mod:`._watch`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from typing import IO, Protocol

import anyio

from ._sandbox import Spawn


class Process(Protocol):
    """What the sidecar watches of a command: a :class:`Child` of its own, or a command a
    session's runner started (:class:`._sessions.SessionCommand`)."""

    @property
    def stdout(self) -> int: ...
    @property
    def stderr(self) -> int: ...
    @property
    def pidfd(self) -> int:
        """Readable once the command has ended."""
        ...

    @property
    def returncode(self) -> int | None: ...
    def reap(self) -> bool: ...
    async def wait(self) -> int | None: ...
    def kill(self) -> None:
        """Kill every process of the command (while it is not yet reaped)."""
        ...

    def close(self) -> None: ...


class Child:
    """A started process: its pid, its output pipes (non-blocking) and, once reaped, its
    exit status (negative for a death by signal, as ``subprocess`` has it)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdout = _fd(popen.stdout)
        self.stderr = _fd(popen.stderr)
        self._pidfd = os.pidfd_open(self.pid)

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    @property
    def pidfd(self) -> int:
        """Readable once the process has exited."""
        return self._pidfd

    def reap(self) -> bool:
        """Reap the process if it has exited; whether it has."""
        return self._popen.poll() is not None

    async def wait(self) -> int:
        """Wait for the exit and reap the process."""
        while not self.reap():
            await anyio.wait_readable(self._pidfd)
        return self._popen.returncode

    def kill(self) -> None:
        """SIGKILL the process group it leads (in a sandbox, bwrap's: its end ends the PID
        namespace, and every process in it)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Release the pipes and the pidfd (idempotent); the process must be reaped first."""
        for stream in (self._popen.stdout, self._popen.stderr):
            if stream is not None:
                stream.close()
        if self._pidfd >= 0:
            os.close(self._pidfd)
        self.stdout = self.stderr = self._pidfd = -1


def spawn_child(spawn: Spawn) -> Child:
    """Start ``spawn`` with stdin from /dev/null and stdout and stderr on pipes."""
    with _acting_as(spawn.user, spawn.group):
        popen = subprocess.Popen(  # noqa: S603 - a command line built by the sandbox
            spawn.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=spawn.env,
            cwd=spawn.cwd,
            start_new_session=True,
            pass_fds=spawn.pass_fds,
        )
    try:
        return Child(popen)
    except BaseException:
        popen.kill()
        popen.wait()
        raise


@contextlib.contextmanager
def _acting_as(uid: int | None, gid: int | None) -> Iterator[None]:
    """Real and effective ``uid`` and ``gid``, no supplementary groups, saved ids kept."""
    if uid is None:
        yield
        return
    gid = uid if gid is None else gid
    groups, gids, uids = os.getgroups(), os.getresgid(), os.getresuid()
    os.setgroups([])
    try:
        os.setresgid(gid, gid, -1)
        try:
            os.setresuid(uid, uid, -1)
            try:
                yield
            finally:
                os.setresuid(*uids)
        finally:
            os.setresgid(*gids)
    finally:
        os.setgroups(groups)


def _fd(stream: IO[bytes] | None) -> int:
    if stream is None:  # pragma: no cover - both pipes are always asked for
        raise ValueError("no pipe")
    fd = stream.fileno()
    os.set_blocking(fd, False)
    return fd
