"""A timeout the caller can rely on, whatever the tool does with cancellation.

``anyio.fail_after`` cancels the work and then *waits for it to finish*: a tool that
swallows cancellation, or a thread that cannot be interrupted, would hold its caller well
past the deadline. Structured concurrency offers no way to stop waiting for a child that
refuses to end, so this one seam steps down to asyncio: the tool runs as its own task, the
caller waits for it with a timeout, and on timeout (or when the caller is cancelled) the
task is cancelled and *abandoned* -- the caller gets its result on time, and the task
finishes on its own, kept referenced until it does.

Abandoning is the last resort, not the way work is stopped. The call's absolute deadline is
visible to the tool while it runs (:func:`current_deadline`), and a tool that stops its own
work at that deadline says so with :func:`claim_deadline` -- the WASM runner does: its
guest's epoch deadline is the pipeline's, so the guest is stopped *inside* wasmtime and the
tool reports the timeout itself. For such a tool the pipeline neither cancels nor abandons
at the deadline: it waits a grace period more (:data:`STOP_GRACE`) for the tool's own
answer, which is also what it reports -- a tool that finished its work just at the deadline
reports success, never a timeout beside work that landed. Only a tool still running after
the grace is cancelled and abandoned. When the caller is cancelled, such a tool is cancelled
and waited for (at most the grace) before the cancellation goes on, so the work has stopped
by then. Every other tool is cancelled (and abandoned) at the deadline itself.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
import types
from collections.abc import Callable, Coroutine, Generator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

T = TypeVar("T")
logger = logging.getLogger("toolcage")

STOP_GRACE = 2.0
"""Seconds past the deadline that a tool which stops its own work has to report."""

_abandoned: set[asyncio.Task[Any]] = set()


@dataclass(slots=True)
class CallDeadline:
    """The deadline of the tool call running in the current context."""

    at: float
    """``time.monotonic()`` value at which the call times out."""
    seconds: float
    """The timeout it was computed from, for messages."""
    claimed: bool = False
    """Whether the tool stops its own work at :attr:`at` (see :func:`claim_deadline`)."""


_current: ContextVar[CallDeadline | None] = ContextVar("toolcage_call_deadline", default=None)


def current_deadline() -> CallDeadline | None:
    """The deadline of the tool call running in this context, if the pipeline set one."""
    return _current.get()


def claim_deadline() -> CallDeadline | None:
    """Promise that the current tool stops its own work at the call's deadline.

    The pipeline then waits :data:`STOP_GRACE` past the deadline for the tool's own result
    before it abandons the call. Returns the deadline (``None`` outside a pipeline call).
    """
    deadline = _current.get()
    if deadline is not None:
        deadline.claimed = True
    return deadline


class DeadlineExceeded(Exception):
    """The work did not finish within its timeout."""


async def run_with_deadline(
    work: Coroutine[Any, Any, T],
    timeout: float,  # noqa: ASYNC109 - the point of this seam (see the module docstring)
    *,
    grace: float = STOP_GRACE,
) -> T:
    """Run ``work`` as a task; its result, or :class:`DeadlineExceeded` (see the module doc).

    ``grace`` is how long past the deadline a tool that claimed it may take to answer.

    Most host tools finish in their task's first step. The caller therefore yields to the
    loop once, bare, right after creating the task: both were queued in that order, so
    the loop runs the task's first step and then the caller, in one iteration. A finished
    task is the whole call -- no timer, no waiter, no second iteration. Only a task still
    running after its first step gets the deadline's timer and is waited for.
    """
    loop = asyncio.get_running_loop()
    deadline = CallDeadline(time.monotonic() + timeout, timeout)
    waiter: asyncio.Future[None] | None = None

    def wake() -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    token = _current.set(deadline)
    try:
        # The task's context is a copy with ``deadline`` set.
        task = loop.create_task(_waking(work, wake))
    finally:
        _current.reset(token)
    timers: list[asyncio.TimerHandle] = []
    try:
        await _step()
        if not task.done():
            waiter = loop.create_future()

            def at_deadline() -> None:
                if deadline.claimed:
                    timers.append(loop.call_later(grace, wake))
                else:
                    wake()

            timers.append(loop.call_later(deadline.at - time.monotonic(), at_deadline))
            await waiter
    except BaseException:
        if deadline.claimed and not task.done():
            await _stop_waiting(task, grace)
        _close_unstarted(work)
        _abandon(task)
        raise
    finally:
        for timer in timers:
            timer.cancel()
    if not task.done():
        _abandon(task)
        raise DeadlineExceeded
    return task.result()


@types.coroutine
def _step() -> Generator[None, None, None]:
    """Yield to the event loop once, as ``asyncio.sleep(0)`` does, without its call."""
    yield


async def _waking(work: Coroutine[Any, Any, T], wake: Callable[[], None]) -> T:
    """``work``, waking its caller as it ends: from inside the task, so the caller resumes
    in the loop's next iteration rather than after a done callback's own turn."""
    try:
        return await work
    finally:
        wake()


def _close_unstarted(work: Coroutine[Any, Any, Any]) -> None:
    """Close ``work`` if its task was cancelled before it began (it would never be awaited)."""
    if inspect.iscoroutine(work) and inspect.getcoroutinestate(work) == inspect.CORO_CREATED:
        work.close()


async def _stop_waiting(task: asyncio.Task[Any], grace: float) -> None:
    """The caller was cancelled: cancel a tool that stops its own work, and give it
    ``grace`` seconds to do so before the caller's cancellation goes on."""
    task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.wait({task}, timeout=grace)


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
        logger.warning(
            "abandoned tool task ended with %r",
            task.exception(),
            extra={"event": "tool.abandoned_failed", "error": repr(task.exception())},
        )
