"""Worker threads that never keep the process alive: where blocking tool work runs.

anyio's worker threads are not daemon threads, and the interpreter joins every such thread
before it exits: one blocking call that never returns (a host function stuck on a socket, a
guest waiting in a host call) would keep the process from ever exiting. The work of tool
calls therefore runs here instead, on *daemon* threads, reused while work keeps coming and
retired after :data:`IDLE_SECONDS` without any.

Cancelling the awaiting task abandons the work, as anyio's ``abandon_on_cancel=True`` does:
the caller gets its cancellation at once and the thread finishes on its own (whoever can
stop the work -- the WASM runner's epoch deadline, a killed worker process -- does so). The
WASM engine keeps a :class:`WorkerPool` of its own for guests. This module needs an asyncio
event loop (as does the pipeline's deadline, see :mod:`._deadline`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

IDLE_SECONDS = 10.0
"""A worker with nothing to do for this long ends."""

_stack_size_lock = threading.Lock()

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class WorkerPool:
    """Daemon worker threads taking jobs from one queue (see the module docstring).

    A job goes to an idle worker, else to a new one (workers are alike: whichever wakes
    first takes the oldest job). ``on_start`` runs first in each new thread (the WASM
    engine pins its guest threads to one CPU there); ``stack_size`` gives each thread a
    native stack of that many bytes (the component engine's guests need a deep one).
    :meth:`close` lets idle workers end now instead of after :data:`IDLE_SECONDS`; busy
    ones end when the queue is empty.
    """

    def __init__(
        self,
        name: str,
        on_start: Callable[[], None] | None = None,
        *,
        stack_size: int | None = None,
    ) -> None:
        self.name = name
        self._on_start = on_start
        self._stack_size = stack_size
        self._jobs: deque[_Job] = deque()
        self._ready = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._workers = 0
        self._idle = 0
        self._closed = False

    async def run(self, func: Callable[[], T]) -> T:
        """Run ``func()`` on a worker; its result, or the exception it raised.

        Cancelling the caller abandons ``func`` (see the module docstring).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._jobs.append((func, loop, future))
            if self._idle:
                self._idle -= 1  # that worker takes it
                spawn = False
            else:
                spawn = True
                self._workers += 1
        self._ready.release()
        if spawn:
            self._start()
        return await future

    def _start(self) -> None:
        start_with_stack(
            threading.Thread(target=self._work, name=self.name, daemon=True), self._stack_size
        )

    def close(self) -> None:
        """Have idle workers end now, and busy ones once the queue is empty."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._ready.release()

    def _work(self) -> None:
        if self._on_start is not None:
            self._on_start()
        while True:
            if not self._ready.acquire(timeout=IDLE_SECONDS):
                if self._retire():
                    return
                continue  # a job came meanwhile: wait for its token again
            with self._lock:
                job = self._jobs.popleft() if self._jobs else None
            if job is None:  # woken to end (close)
                with self._lock:
                    self._workers -= 1
                return
            func, loop, future = job
            del job
            outcome = _call(func)
            del func
            # Idle before the caller hears back: its next job finds this worker.
            with self._lock:
                ending = self._closed and not self._jobs
                if ending:
                    self._workers -= 1
                else:
                    self._idle += 1
            # The loop may be closed by now (its task was abandoned): nobody is waiting.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_deliver, future, outcome)
            del future, outcome
            if ending:
                return

    def _retire(self) -> bool:
        """After an idle wait: end (True), or go on when a job was handed over meanwhile."""
        with self._lock:
            if self._jobs:  # it was counted on for a job that came meanwhile
                return False
            self._idle -= 1
            self._workers -= 1
            return True


def _call(func: Callable[[], Any]) -> tuple[bool, Any]:
    try:
        return True, func()
    except BaseException as exc:  # delivered to the awaiting task
        return False, exc


def _deliver(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():  # the awaiting task was cancelled: the work was abandoned
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


_workers = WorkerPool("toolcage-worker")


async def run_in_worker(func: Callable[[], T]) -> T:
    """Run ``func()`` on a daemon worker thread of the shared pool; see :meth:`WorkerPool.run`."""
    return await _workers.run(func)


def start_with_stack(thread: threading.Thread, stack_size: int | None) -> None:
    """Start ``thread`` with a native stack of ``stack_size`` bytes (``None``: the default).

    The size is process-wide and read when a thread starts: it is set for this start only,
    under a lock, so threads started elsewhere at the same time keep theirs."""
    if stack_size is None:
        thread.start()
        return
    with _stack_size_lock:
        previous = threading.stack_size(stack_size)
        try:
            thread.start()
        finally:
            threading.stack_size(previous)
