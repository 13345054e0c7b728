"""Stopping a running guest from outside its thread: timeouts and cancellation.

Each store gets an epoch deadline of one tick and a deadline callback
(:func:`._capi.epoch_deadline_callback`). At every tick that reaches a running guest the
callback looks at the call's :class:`CallControl`: past its deadline, or stopped (the
awaiting task was cancelled, or the engine is closing), it returns an error and wasmtime
unwinds the guest at once;
otherwise it extends the deadline by one tick. Guests shorter than a tick never see it.
"""

from __future__ import annotations

import threading
import time

import wasmtime

from ._capi import epoch_deadline_callback

STOP_MESSAGE = b"toolcage: guest stopped"


class CallControl:
    """The stop switch and deadline of one guest run."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        """``time.monotonic()`` value at which the guest is stopped."""
        self.reason: str | None = None
        """Why the guest was stopped, once it was: ``"timeout"``, ``"cancelled"`` (by the
        awaiting task) or ``"closed"`` (its engine was closed)."""
        self._lock = threading.Lock()

    def stop(self, reason: str) -> None:
        """Ask the guest to stop at the next epoch tick (first reason wins)."""
        with self._lock:
            if self.reason is None:
                self.reason = reason

    def should_stop(self) -> bool:
        if self.reason is None and time.monotonic() >= self.deadline:
            self.stop("timeout")
        return self.reason is not None


def attach(store: wasmtime.Store, control: CallControl) -> None:
    """Make ``store`` consult ``control`` at every epoch tick while a guest runs in it."""
    epoch_deadline_callback(store, control.should_stop, STOP_MESSAGE)
    store.set_epoch_deadline(1)
