"""The stdio transport to a configured MCP server, with a bound on every message.

The SDK's stdio client joins a server's output into one buffer until a newline arrives, so
a server that writes one endless line grows the runtime's memory for as long as it writes.
This transport speaks the same protocol -- one JSON-RPC message per line, each way -- but
reads at most ``max_bytes`` of a line: a server that goes past it is killed at once (the
rest of the line is never read), ``too_large`` is told how much had arrived, and the
session sees the connection end. The connection decides what that means for the server
(:mod:`._limits`).

It also starts the server the way the sandbox needs: in a process group of its own, with
stdin, stdout and stderr on pipes, and, when ``user`` is given, as that uid and gid with no
supplementary groups. Shutdown follows the MCP spec -- stdin closed, a grace period, then
the process group terminated and killed -- under a cancellation shield, so a cancelled
caller cannot leak a live server.

What the connection needs to know of one run of the server it learns from a
:class:`ServerRun`: whether the server has exited (so a server killed between calls is
restarted before the next one, not found dead by it), its exit status, and the last
:data:`STDERR_TAIL` bytes of its stderr -- read all along, so a chatty server never blocks
on a full pipe, and kept only as a tail, since a server's log is not the host's -- which
say why a server that did not start did not.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

_logger = logging.getLogger("toolcage.mcp")
_CHUNK = 64 * 1024
GRACE_SECONDS = 2.0
"""How long a server has to exit once its stdin is closed, and again once terminated."""
STDERR_TAIL = 4096
"""Bytes of a server's stderr kept: the last ones, which say why it ended."""

Incoming = SessionMessage | Exception


class ServerRun:
    """One run of a stdio server, as far as its transport has seen it."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.returncode: int | None = None
        """Its exit status once stopped (negative: the signal that ended it)."""
        self.closed = False
        """Whether its stdout has ended: the server is gone or going."""
        self._stderr = bytearray()
        self._pidfd: int | None = None

    def started(self, pid: int) -> None:
        """The server runs as ``pid``: a pidfd is kept on it, readable once it has exited
        (zombie or reaped alike, so whoever reaps it first cannot hide its exit)."""
        self.pid = pid
        with contextlib.suppress(OSError):  # gone already: :meth:`exited` asks waitid
            self._pidfd = os.pidfd_open(pid)

    def ended(self, returncode: int | None) -> None:
        """The server has stopped with ``returncode``; the pidfd is closed."""
        self.returncode = returncode
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    @property
    def stderr(self) -> str:
        """The tail of its stderr, decoded leniently."""
        return self._stderr.decode("utf-8", "replace")

    def keep(self, chunk: bytes) -> None:
        self._stderr += chunk
        del self._stderr[:-STDERR_TAIL]

    def exited(self) -> bool:
        """Whether the server's process has exited, decided now: its pidfd is polled
        (the event loop's child watcher reaps it, and may be doing so right now, when a
        ``waitid`` would no longer see it); without one, the kernel is asked without
        reaping it."""
        if self.closed or self.returncode is not None:
            return True
        if self._pidfd is not None:
            poller = select.poll()  # not select(): a descriptor may be past FD_SETSIZE
            poller.register(self._pidfd, select.POLLIN)
            return bool(poller.poll(0))
        if self.pid is None:
            return False
        try:
            state = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped already
            return True
        return state is not None


@asynccontextmanager
async def stdio_transport(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    max_bytes: int,
    too_large: Callable[[int], None],
    user: int | None = None,
    run: ServerRun | None = None,
) -> AsyncIterator[TransportStreams]:
    """Start ``argv`` and yield the session's read and write streams; stop it on exit.
    ``run`` learns the process's id, stderr and exit status."""
    run = ServerRun() if run is None else run
    process = await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its process group is what shutdown kills
        user=user,
        group=user,
        extra_groups=[] if user is not None else None,
    )
    run.started(process.pid)
    incoming_in, incoming = anyio.create_memory_object_stream[Incoming](0)
    outgoing, outgoing_out = anyio.create_memory_object_stream[SessionMessage](0)
    stderr_read = anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process, incoming_in, max_bytes, too_large, run)
        tasks.start_soon(_write, process, outgoing_out, incoming_in)
        tasks.start_soon(_keep_stderr, process, run, stderr_read)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                incoming.close()  # the reader now discards what the server still writes
                outgoing.close()
                await _stop(process)
                run.ended(process.returncode)
                with anyio.move_on_after(GRACE_SECONDS):  # its last words, if it said any
                    await stderr_read.wait()
            tasks.cancel_scope.cancel()


async def _read(
    process: anyio.abc.Process,
    sink: MemoryObjectSendStream[Incoming],
    max_bytes: int,
    too_large: Callable[[int], None],
    run: ServerRun,
) -> None:
    """Hand each line to the session as a message; stop at a line past ``max_bytes``."""
    assert process.stdout is not None  # noqa: S101 -- opened with a pipe
    line = bytearray()
    async with sink:
        try:
            while True:
                chunk = await process.stdout.receive(_CHUNK)
                start, end = 0, chunk.find(b"\n")
                while end >= 0 and len(line) + end - start <= max_bytes:
                    line += chunk[start:end]
                    await sink.send(_parse(line))
                    line.clear()
                    start, end = end + 1, chunk.find(b"\n", end + 1)
                if len(line) + len(chunk) - start > max_bytes:
                    _kill_group(process)
                    too_large(len(line) + len(chunk) - start)
                    return
                line += chunk[start:]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            await _drain(process)  # the session is gone: let the server flush and exit
        except (anyio.EndOfStream, OSError):
            run.closed = True


async def _keep_stderr(process: anyio.abc.Process, run: ServerRun, done: anyio.Event) -> None:
    """Read the server's stderr to its end, keeping the tail."""
    assert process.stderr is not None  # noqa: S101 -- opened with a pipe
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            run.keep(await process.stderr.receive(_CHUNK))
    done.set()


async def _write(
    process: anyio.abc.Process,
    source: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[Incoming],
) -> None:
    """Send each of the session's messages as one line."""
    assert process.stdin is not None  # noqa: S101 -- opened with a pipe
    try:
        async with source:
            async for message in source:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(line.encode() + b"\n")
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        # the server stopped reading: end the session's view too, or a request would hang
        await incoming.aclose()


def _parse(line: bytearray) -> Incoming:
    """One message, or the reason it is none (the session skips those)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _drain(process: anyio.abc.Process) -> None:
    assert process.stdout is not None  # noqa: S101 -- opened with a pipe
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
        while True:
            await process.stdout.receive(_CHUNK)


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the server :data:`GRACE_SECONDS`, then terminate and kill its group."""
    assert process.stdin is not None  # noqa: S101 -- opened with a pipe
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    for sent in (signal.SIGTERM, signal.SIGKILL):
        if await _exited(process, GRACE_SECONDS):
            break
        _kill_group(process, sent)
    if await _exited(process, GRACE_SECONDS):
        await process.aclose()
    else:
        _logger.warning(
            "MCP server process %d survived SIGKILL; abandoning it",
            process.pid,
            extra={"event": "mcp.server_abandoned", "pid": process.pid},
        )


async def _exited(process: anyio.abc.Process, seconds: float) -> bool:
    """Whether the process has exited within ``seconds``."""
    with anyio.move_on_after(seconds):
        await process.wait()
    return process.returncode is not None


def _kill_group(process: anyio.abc.Process, sent: signal.Signals = signal.SIGKILL) -> None:
    # the leader's pid is the group's id (start_new_session): its members die even once
    # the leader is gone, and a bubblewrap leader takes its whole sandbox with it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sent)
