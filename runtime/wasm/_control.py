"""Stopping a running guest from outside its thread: timeouts and cancellation.

Each store gets an epoch deadline of one tick and a deadline callback
(:class:`._capi.GuestStore`). At every tick that reaches a running guest the
callback looks at the call's :class:`CallControl`: past its deadline, or stopped (the
awaiting task was cancelled, or the engine is closing), it returns an error and wasmtime
unwinds the guest at once;
otherwise it extends the deadline by one tick. Guests shorter than a tick never see it.

A guest started on the event loop's own thread (see :mod:`._runner`) also has an overrun
time: at the first tick past it the guest is stopped with the reason ``"overran"``, and the
runner starts it again on a guest thread.
"""

from __future__ import annotations

import threading
import time

STOP_MESSAGE = b"toolcage: guest stopped"

LANDED_GRACE = 1.0
"""Seconds past its deadline a guest whose effect landed has to report it (less than the
pipeline's :data:`~.._deadline.STOP_GRACE`, which waits for that report)."""

OVERRAN = "overran"
"""The stop reason of a guest that ran past its time on the event loop's thread."""


class CallControl:
    """The stop switch and deadline of one guest run."""

    def __init__(self, deadline: float, overrun: float | None = None) -> None:
        self.deadline = deadline
        """``time.monotonic()`` value at which the guest is stopped."""
        self._latest = deadline + LANDED_GRACE
        self.overrun = overrun
        """``time.monotonic()`` value past which a guest on the event loop's thread yields it."""
        self.reason: str | None = None
        """Why the guest was stopped, once it was: ``"timeout"``, ``"cancelled"`` (by the
        awaiting task), ``"closed"`` (its engine was closed) or ``"overran"``."""
        self._lock = threading.Lock()

    def stop(self, reason: str) -> None:
        """Ask the guest to stop at the next epoch tick (first reason wins)."""
        with self._lock:
            if self.reason is None:
                self.reason = reason

    def landed(self) -> None:
        """The guest's effect landed (a host function committed a write): it is not stopped
        before it has had :data:`LANDED_GRACE` to report it, so a run stopped at its
        deadline has changed nothing."""
        self.deadline = max(self.deadline, min(time.monotonic() + LANDED_GRACE, self._latest))

    def should_stop(self) -> bool:
        if self.reason is None:
            now = time.monotonic()
            if now >= self.deadline:
                self.stop("timeout")
            elif self.overrun is not None and now >= self.overrun:
                self.stop(OVERRAN)
        return self.reason is not None
