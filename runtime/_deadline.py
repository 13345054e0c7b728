"""A timeout the caller can rely on, whatever the tool does with cancellation.

``anyio.fail_after`` cancels the work and then *waits for it to finish*: a tool that
swallows cancellation, or a thread that cannot be interrupted, would hold its caller well
past the deadline. Structured concurrency offers no way to stop waiting for a child that
refuses to end, so this one seam steps down to asyncio: the tool runs as its own task, the
caller waits for it with a timeout, and on timeout (or when the caller is cancelled) the
task is cancelled and *abandoned* -- the caller gets its result on time, and the task
finishes on its own, kept referenced until it does.

Abandoning is the last resort, not the way work is stopped: cancellation still reaches the
tool at once, WASM guests are interrupted by their epoch deadline and shell commands by a
process-group kill, so nothing runs on unobserved for long.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
logger = logging.getLogger("toolcage")

_abandoned: set[asyncio.Task[Any]] = set()


class DeadlineExceeded(Exception):
    """The work did not finish within its timeout."""


async def run_with_deadline(work: Coroutine[Any, Any, T], timeout: float) -> T:  # noqa: ASYNC109 - the point of this seam (see the module docstring)
    """Run ``work`` as a task; its result, or :class:`DeadlineExceeded` after ``timeout`` s."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(work)
    # What asyncio.wait does, without its per-call set and list bookkeeping.
    waiter = loop.create_future()
    wake = functools.partial(_wake, waiter)
    task.add_done_callback(wake)
    timer = loop.call_later(timeout, wake)
    try:
        await waiter
    except BaseException:
        _abandon(task)
        raise
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
    if not task.done():
        _abandon(task)
        raise DeadlineExceeded
    return task.result()


def _wake(waiter: asyncio.Future[None], *_: object) -> None:
    if not waiter.done():
        waiter.set_result(None)


def abandoned_count() -> int:
    """How many cancelled tasks have not finished yet (for tests and diagnostics)."""
    return len(_abandoned)


def _abandon(task: asyncio.Task[Any]) -> None:
    task.cancel()
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved, so asyncio does not report it as lost
        return
    _abandoned.add(task)
    task.add_done_callback(_forget)


def _forget(task: asyncio.Task[Any]) -> None:
    _abandoned.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.warning("abandoned tool task ended with %r", task.exception())
