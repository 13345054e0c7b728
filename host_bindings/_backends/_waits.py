"""How long the store may wait: never past the running call's deadline.

A store is called from a guest's thread, inside a host function, and the call has a
deadline (``CallState.deadline``). The state bindings enter :func:`until` around each
request; every wait of a backend -- SQLite's busy handler on another writer's lock, the
retries of a rate-limit counter, a libSQL request -- asks :func:`budget` how long it may
last, which is its own limit or less: the time left before the deadline, less
:data:`MARGIN`.

The margin is what makes a timeout mean "nothing happened". A write transaction commits
only while :func:`expired` is false; past that it is rolled back and the request fails
with :class:`~._errors.StoreTimeout`. A commit that lands leaves the guest the margin to
report it before the deadline stops it, and :func:`committed` tells the call that its
effect landed (its guest then has a grace past the deadline to report it), so a call that
reports ``timeout`` has had no effect, and one whose write landed reports success.
Outside a call (no :func:`until`), a wait lasts its own limit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

MARGIN = 0.25
"""Seconds before the call's deadline by which a write must have committed."""

FIRST_PAUSE = 0.001
LAST_PAUSE = 0.05
"""Seconds between tries on a contended lock: doubling from the first to the last."""

_deadline: ContextVar[float | None] = ContextVar("toolcage_store_deadline", default=None)
_landed: ContextVar[Callable[[], None] | None] = ContextVar("toolcage_store_landed", default=None)


@contextlib.contextmanager
def until(deadline: float | None, landed: Callable[[], None] | None = None) -> Iterator[None]:
    """Bound the store's waits in this context by ``deadline`` (``time.monotonic()``);
    ``landed()`` is called when a write commits (see :func:`committed`)."""
    token = _deadline.set(deadline)
    hook = _landed.set(landed)
    try:
        yield
    finally:
        _landed.reset(hook)
        _deadline.reset(token)


def committed() -> None:
    """A write of this context has committed: the call must be let to report it
    (:class:`~toolcage.host_bindings.Landing`), whatever the margin left."""
    landed = _landed.get()
    if landed is not None:
        landed()


def budget(longest: float) -> float:
    """Seconds a wait may last: ``longest``, or what is left before the call's deadline
    less :data:`MARGIN` when that is less (never below zero)."""
    deadline = _deadline.get()
    if deadline is None:
        return longest
    return max(0.0, min(longest, deadline - MARGIN - time.monotonic()))


def expired() -> bool:
    """Whether the call's deadline (less :data:`MARGIN`) has come: nothing may commit now."""
    deadline = _deadline.get()
    return deadline is not None and time.monotonic() >= deadline - MARGIN


def bounded() -> bool:
    """Whether a call's deadline bounds the waits of this context."""
    return _deadline.get() is not None


def retried(attempt: Callable[[], T], longest: float, busy: tuple[type[BaseException], ...]) -> T:
    """``attempt()``, tried again after growing pauses while it raises one of ``busy``,
    until :func:`budget` of ``longest`` is spent; then its last error is raised."""
    give_up = time.monotonic() + budget(longest)
    pause = FIRST_PAUSE
    while True:
        try:
            return attempt()
        except busy:
            if time.monotonic() + pause >= give_up:
                raise
        time.sleep(pause)
        pause = min(pause * 2, LAST_PAUSE)
