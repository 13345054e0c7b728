"""One command's process: start it, read it, time it out, kill its whole tree.

The command's process group is bwrap's (or bash's, on the host): ``start_new_session``
makes the first process its leader, so one ``killpg`` reaches everything in it -- and in
a sandbox, killing bwrap ends the PID namespace, which takes along children that left
the group. A command of a session's runner (:mod:`._sessions`) is killed by its runner,
which ends the command's own PID namespace likewise. After a kill the output pipes are
drained for a moment more, so what the command printed before it died is returned with
the timeout.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import anyio

from ._child import Process, spawn_child
from ._report import REPORT_BYTES, Report, parse_report
from ._sandbox import Spawn
from ._watch import PipeWatch, Sink

DRAIN_SECONDS = 2.0
"""How long output is still read after the command ended or was killed."""


@dataclass
class Running:
    """A started command: its process and the read end of its report pipe."""

    process: Process
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


def kill_group(process: Process) -> None:
    """Kill every process of the command (while it is not yet reaped)."""
    process.kill()


class _Capped:
    """The report's bytes, kept up to just past :data:`REPORT_BYTES` (a longer one is
    ignored anyway)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def feed(self, data: bytes) -> None:
        if len(self.data) <= REPORT_BYTES:
            self.data += data


async def watch(
    running: Running, stdout: Sink, stderr: Sink, seconds: float, report: Sink | None = None
) -> bool:
    """Read the command's pipes until it ends or ``seconds`` pass, then kill its group if
    it timed out (or leftovers are to be killed) and read on for :data:`DRAIN_SECONDS` at
    most; whether it timed out. The caller then reaps it with :func:`finish`."""
    process = running.process
    pipes: dict[int, Sink] = {process.stdout: stdout, process.stderr: stderr}
    if report is not None:
        pipes[running.report_fd] = report
    watched = PipeWatch(pipes, process.pidfd, process.reap)
    try:
        with anyio.move_on_after(seconds) as scope:
            await watched.exited.wait()
        timed_out = scope.cancelled_caught
        if timed_out or running.kill_leftovers:
            kill_group(process)
        if not watched.drained.is_set():
            with anyio.move_on_after(DRAIN_SECONDS):
                await watched.drained.wait()
    finally:
        watched.close()
    return timed_out


async def supervise(
    running: Running, stdout: Sink, stderr: Sink, seconds: float
) -> tuple[int | None, bool, Report | None]:
    """Read the command to its end or for ``seconds``: (exit code, timed out, report).

    The exit code is the shell's convention: 128 + N for a death by signal N, ``None``
    when the command was killed for its timeout. Cancellation kills the command too.
    """
    report = _Capped()
    timed_out = False
    try:
        timed_out = await watch(running, stdout, stderr, seconds, report)
    finally:
        with anyio.CancelScope(shield=True):
            await finish(running)
    code = running.process.returncode
    if timed_out or code is None:
        return None, timed_out, None
    exit_code = 128 - code if code < 0 else code
    return exit_code, False, parse_report(bytes(report.data))


async def finish(running: Running) -> None:
    """Kill what is left of the command, reap it and release its pipes (idempotent)."""
    process = running.process
    if not process.reap():
        kill_group(process)
        with anyio.move_on_after(10):
            await process.wait()
    if process.returncode is not None:
        process.close()
    if running.report_fd >= 0:
        os.close(running.report_fd)
        running.report_fd = -1
