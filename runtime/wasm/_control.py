"""Stopping a running guest from outside its thread: timeouts and cancellation.

Each store gets an epoch deadline of one tick and a deadline callback (wasmtime's
``wasmtime_store_epoch_deadline_callback``). At every tick that reaches a running guest the
callback looks at the call's :class:`CallControl`: past its deadline, or stopped (the
awaiting task was cancelled, or the engine is closing), it returns an error and wasmtime
unwinds the guest at once;
otherwise it extends the deadline by one tick. Guests shorter than a tick never see it.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
import time
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

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


_controls: dict[int, CallControl] = {}
_ids = itertools.count(1)


def _on_deadline(context: Any, data: int | None, delta: Any, kind: Any) -> int:
    control = _controls.get(data or 0)
    if control is None or control.should_stop():
        error = ffi.wasmtime_error_new(STOP_MESSAGE)
        return ctypes.cast(error, ctypes.c_void_p).value or 0
    delta[0] = 1
    kind[0] = 0  # WASMTIME_UPDATE_DEADLINE_CONTINUE
    return 0


def _on_finalize(data: int | None) -> None:
    _controls.pop(data or 0, None)


_CALLBACK_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_size_t,
    ctypes.POINTER(ffi.wasmtime_context_t),
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t),
)
_FINALIZER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_CALLBACK = _CALLBACK_TYPE(_on_deadline)
_FINALIZER = _FINALIZER_TYPE(_on_finalize)


def attach(store: wasmtime.Store, control: CallControl) -> None:
    """Make ``store`` consult ``control`` at every epoch tick while a guest runs in it."""
    key = next(_ids)
    _controls[key] = control
    ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), _CALLBACK, key, _FINALIZER)
    store.set_epoch_deadline(1)
