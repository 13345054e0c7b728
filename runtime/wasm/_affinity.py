"""Keeping a guest call's thread hand-offs on one CPU.

wasmtime's C API hands every WASI file operation of a guest to a thread of its own pool and
waits for the answer: a file operation is a wake-up of another thread and a wake-up back.
When the two threads sit on different CPUs, each wake-up is an inter-processor interrupt,
which on a virtual machine costs ~100 µs (measured here: a thread round trip of 200 µs across
CPUs, 27 µs on one); on one CPU it is a context switch. So the engine's guest threads are
pinned to one chosen CPU when they start (:meth:`GuestCpu.pin`; moving a thread on every
call would cost a migration each time), and the pool threads they start inherit that CPU.
This matters for the guests that use WASI files (the tools that write); the reading tools
read through the ``fs`` binding in their own thread, and guests started on the event loop's
thread use no WASI files at all.

The price: guests running at the same time share that CPU. An operator whose guests are
CPU-heavy and parallel can turn it off (``[limits] guests_on_one_cpu = false``).
"""

from __future__ import annotations

import os


class GuestCpu:
    """The CPU guest calls are pinned to, or none (one CPU available, or turned off)."""

    def __init__(self, enabled: bool = True) -> None:
        allowed = os.sched_getaffinity(0)
        self.cpu = max(allowed) if enabled and len(allowed) > 1 else None
        """The chosen CPU: the last of the process's set (the first tends to take interrupts)."""

    def pin(self) -> None:
        """Keep the calling thread on :attr:`cpu` from now on (nothing if there is none)."""
        if self.cpu is not None:
            os.sched_setaffinity(0, {self.cpu})
