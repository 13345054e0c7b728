"""Worker threads that never keep the process alive: where blocking tool work runs.

anyio's worker threads are not daemon threads, and the interpreter joins every such thread
before it exits: one blocking call that never returns (a host function stuck on a socket, a
guest waiting in a host call) would keep the process from ever exiting. The work of tool
calls therefore runs here instead, on *daemon* threads, reused while work keeps coming and
retired after :data:`IDLE_SECONDS` without any.

Cancelling the awaiting task abandons the work, as anyio's ``abandon_on_cancel=True`` does:
the caller gets its cancellation at once and the thread finishes on its own (whoever can
stop the work -- the WASM runner's epoch deadline, a killed worker process -- does so). This
module needs an asyncio event loop (as does the pipeline's deadline, see :mod:`._deadline`).
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

_Job = tuple[Callable[[], Any], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class _Worker(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="toolcage-worker", daemon=True)
        self.jobs: deque[_Job] = deque()
        self.ready = threading.Semaphore(0)

    def run(self) -> None:
        while True:
            if not self.ready.acquire(timeout=IDLE_SECONDS):
                with _lock:
                    if self in _idle:  # nobody handed it a job meanwhile: retire
                        _idle.remove(self)
                        return
                self.ready.acquire()
            func, loop, future = self.jobs.popleft()
            try:
                outcome: tuple[bool, Any] = (True, func())
            except BaseException as exc:  # delivered to the awaiting task
                outcome = (False, exc)
            del func
            # The loop may be closed by now (its task was abandoned): nobody is waiting.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_deliver, future, outcome)
            del future, outcome
            with _lock:
                _idle.append(self)


_idle: list[_Worker] = []
_lock = threading.Lock()


def _deliver(future: asyncio.Future[Any], outcome: tuple[bool, Any]) -> None:
    if future.done():  # the awaiting task was cancelled: the work was abandoned
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


async def run_in_worker(func: Callable[[], T]) -> T:
    """Run ``func()`` on a daemon worker thread; its result, or the exception it raised.

    Cancelling the caller abandons ``func`` (see the module docstring).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        worker.jobs.append((func, loop, future))
        worker.ready.release()
        worker.start()
    else:
        worker.jobs.append((func, loop, future))
        worker.ready.release()
    return await future
