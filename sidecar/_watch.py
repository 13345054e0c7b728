"""Watching a running command: its pipes read as data arrives, its exit seen on a pidfd.

A command has three pipes (stdout, stderr and the report) and an exit. Waiting on each
with ``anyio.wait_readable`` takes a task per pipe, and every chunk then costs a future, a
task step and a registration with the event loop made and undone -- for ``echo hi`` some
0.5 ms of a busy daemon's time, spent while the sandbox is still starting on the same CPUs.
This module steps down to the asyncio loop the daemon runs on (``anyio.run``'s default
backend, which :mod:`.__main__` names): each descriptor is registered once with
``loop.add_reader`` and its callback reads straight into its sink, so a command's output
and exit cost one callback each and wake no task until the exit (:attr:`PipeWatch.exited`)
or the end of every pipe (:attr:`PipeWatch.drained`).

A callback reads at most one chunk per readiness; the loop calls it again while the pipe
holds more, so a flood of output never keeps the loop from its other work.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Protocol

import anyio

CHUNK_BYTES = 65536


class Sink(Protocol):
    def feed(self, data: bytes) -> None: ...


class PipeWatch:
    """Feeds each pipe's data to its sink until end of file, and notes the exit.

    ``exited`` is set once ``reaped()`` (called when the pidfd turns readable) returns
    true; ``drained`` once every pipe reached its end. :meth:`close` unregisters what is
    left (the caller still owns and closes the descriptors).
    """

    def __init__(self, pipes: Mapping[int, Sink], pidfd: int, reaped: Callable[[], bool]) -> None:
        self._loop = asyncio.get_running_loop()
        self._sinks = dict(pipes)
        self._pidfd = pidfd
        self._reaped = reaped
        self.exited = anyio.Event()
        self.drained = anyio.Event()
        self._watching_exit = False
        registered: list[int] = []
        try:
            for fd in self._sinks:
                self._loop.add_reader(fd, self._readable, fd)
                registered.append(fd)
            self._loop.add_reader(pidfd, self._exit)
            self._watching_exit = True
        except BaseException:
            for fd in registered:
                self._loop.remove_reader(fd)
            raise
        if not self._sinks:
            self.drained.set()

    def _readable(self, fd: int) -> None:
        try:
            chunk = os.read(fd, CHUNK_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            self._sinks[fd].feed(chunk)
            return
        self._loop.remove_reader(fd)
        del self._sinks[fd]
        if not self._sinks:
            self.drained.set()

    def _exit(self) -> None:
        if self._reaped():
            self._stop_watching_exit()
            self.exited.set()

    def _stop_watching_exit(self) -> None:
        if self._watching_exit:
            self._watching_exit = False
            self._loop.remove_reader(self._pidfd)

    def close(self) -> None:
        """Stop watching (idempotent)."""
        for fd in self._sinks:
            self._loop.remove_reader(fd)
        self._sinks.clear()
        self._stop_watching_exit()
