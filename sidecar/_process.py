"""One command's process: start it, read it, time it out, kill its whole tree.

The command's process group is bwrap's (or bash's, on the host): ``start_new_session``
makes the first process its leader, so one ``killpg`` reaches everything in it -- and in
a sandbox, killing bwrap ends the PID namespace, which takes along children that left
the group. After a kill the output pipes are drained for a moment more, so what the
command printed before it died is returned with the timeout.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from typing import Protocol

import anyio

from ._child import Child, spawn_child
from ._report import REPORT_BYTES, Report, parse_report
from ._sandbox import Spawn

DRAIN_SECONDS = 2.0
"""How long output is still read after the command ended or was killed."""


class Sink(Protocol):
    def feed(self, data: bytes) -> None: ...


@dataclass
class Running:
    """A started command: its process and the read end of its report pipe."""

    process: Child
    report_fd: int
    started: float
    kill_leftovers: bool
    """Kill the group after a normal exit too (on the host, where no namespace ends)."""


def start(spawn: Spawn, report_fd: int, *, kill_leftovers: bool) -> Running:
    """Start ``spawn``; the caller passes the report pipe's read end and owns it."""
    try:
        process = spawn_child(spawn)
    finally:
        for fd in spawn.pass_fds:
            os.close(fd)
    return Running(process, report_fd, time.monotonic(), kill_leftovers)


def kill_group(process: Child) -> None:
    """SIGKILL the process group led by ``process`` (while it is not yet reaped)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def pump(fd: int, sink: Sink) -> None:
    """Feed what the pipe ``fd`` carries to ``sink`` until end of file."""
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            return
        sink.feed(chunk)


async def read_report(fd: int, into: bytearray) -> None:
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            return
        if len(into) <= REPORT_BYTES:
            into += chunk


async def supervise(
    running: Running, stdout: Sink, stderr: Sink, seconds: float
) -> tuple[int | None, bool, Report | None]:
    """Read the command to its end or for ``seconds``: (exit code, timed out, report).

    The exit code is the shell's convention: 128 + N for a death by signal N, ``None``
    when the command was killed for its timeout. Cancellation kills the command too.
    """
    process = running.process
    report = bytearray()
    timed_out = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump, process.stdout, stdout)
            tg.start_soon(pump, process.stderr, stderr)
            tg.start_soon(read_report, running.report_fd, report)
            with anyio.move_on_after(seconds) as scope:
                await process.wait()
            if scope.cancelled_caught:
                timed_out = True
                kill_group(process)
            elif running.kill_leftovers:
                kill_group(process)
            tg.cancel_scope.deadline = anyio.current_time() + DRAIN_SECONDS
    finally:
        with anyio.CancelScope(shield=True):
            await finish(running)
    code = process.returncode
    if timed_out or code is None:
        return None, timed_out, None
    exit_code = 128 - code if code < 0 else code
    return exit_code, False, parse_report(bytes(report))


async def finish(running: Running) -> None:
    """Kill what is left of the command, reap it and release its pipes (idempotent)."""
    process = running.process
    if process.returncode is None:
        kill_group(process)
    with anyio.move_on_after(10):
        await process.wait()
    if process.returncode is not None:
        process.close()
    if running.report_fd >= 0:
        os.close(running.report_fd)
        running.report_fd = -1
