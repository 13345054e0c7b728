"""One wasmtime :class:`~wasmtime.Engine` per runtime: its clock, its guests, its release.

Epoch interruption is how a guest is stopped *inside* wasmtime: compiled code checks the
engine's epoch counter at loop heads and function entries, and a store whose deadline has
passed calls back into the host (see :mod:`._control`). A daemon thread advances the epoch
every :data:`TICK` seconds from the first guest run until the engine is released, taking the
GIL once a tick and briefly (a tick that took it twice, handing it back and forth with the
thread running guests, cost a guest call on the event loop's thread ~15% here).

The engine reserves its pooling allocator's slots when it is created (about 512 GiB of
address space and a few hundred mappings), so it is created on first use -- a runtime that
never runs a guest reserves nothing -- and released by :meth:`WasmEngine.close`: every
running guest is stopped (at the next tick), close waits for them (at most
:data:`CLOSE_GRACE` seconds), then the wasmtime objects made for the engine (registered with
:meth:`WasmEngine.on_release`) and the engine itself are freed, which returns the
reservation. A guest that does not stop in time (it is blocked in a host call, where epochs
do not reach) delays the release until it ends; it never blocks the caller longer.

Besides running guests an engine counts *parked* ones: instances prepared ahead of a call
(:mod:`._spares`) that hold a store and a pool slot but run nothing. They are not running
(:meth:`WasmEngine.running` leaves them out, and close does not wait for them): close drops
them first, and whoever takes one back with :meth:`WasmEngine.unpark` owns it only if close
has not dropped it already.

What an engine runs is its :class:`EngineProfile`: :data:`MODULES` (the WASI guest modules)
or :data:`~._component_engine.COMPONENTS` (WebAssembly components: ``python_exec``). A
runtime that uses both has one engine of each, made and released alike.

At interpreter exit every engine still open is closed the same way, and the exit waits
(at most :data:`EXIT_GRACE` seconds in all) until wasmtime's own threads have finished
calling back into Python: a guest's stdout and stderr are written, and finally dropped, by
wasmtime's tokio threads through Python callbacks, and a callback that runs while the
interpreter finalizes aborts the process ("panic in a function that cannot unwind").
"""

from __future__ import annotations

import atexit
import threading
import time
import warnings
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import wasmtime

from .._threads import WorkerPool
from ._affinity import GuestCpu
from ._capi import epoch_ticker, live_output_callbacks, use_pooling_allocator
from ._control import CallControl

TICK = 0.005
"""Seconds between epoch ticks: the resolution at which a running guest is stopped."""

POOL_INSTANCES = 128
"""Guest instances that can be alive at once with the pooling allocator."""

CLOSE_GRACE = 5.0
"""Seconds :meth:`WasmEngine.close` waits for running guests to stop."""

EXIT_GRACE = 2.0
"""Seconds the interpreter's exit waits for guests to stop and wasmtime's callbacks to end."""


class EngineClosedError(RuntimeError):
    """The engine was closed: it runs no more guests."""


class Parked(ABC):
    """An instance prepared ahead of its call, held by the engine until taken or dropped."""

    @abstractmethod
    def drop(self) -> None:
        """Free it (its store and pool slot) without running it."""


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """What kind of guests an engine runs: how it is configured and how many run at once."""

    name: str
    """Names its guest threads (``toolcage-NAME``) and heads its :attr:`~WasmEngine.settings`."""
    instances: int
    """Guest instances that can be alive at once (the pooling allocator's slots)."""
    configure: Callable[[int], wasmtime.Config]
    """The engine's config, given the largest memory a guest may have."""
    settings: str = ""
    """Settings beyond epoch, copy-on-write and pooling that compiled code depends on."""
    thread_stack: int | None = None
    """Native stack of each guest thread, in bytes (None: the platform's default)."""


def _module_config(max_memory_bytes: int) -> wasmtime.Config:
    config = wasmtime.Config()
    config.epoch_interruption = True
    # A guest gets a fresh instance per call; copy-on-write initial memory keeps that cheap.
    config.memory_init_cow = True
    # Instances from preallocated slots: ~10% off a short call. Each slot reserves address
    # space for max_memory_bytes (no memory is committed until a guest touches it), so no
    # guest of this engine can grow past it. Stacks are pooled per instance too (wasmtime's
    # default of 1,000 stack slots costs ~2,000 mappings).
    use_pooling_allocator(config, instances=POOL_INSTANCES, max_memory_bytes=max_memory_bytes)
    return config


MODULES = EngineProfile("guest", POOL_INSTANCES, _module_config)
"""The engine of the WASI guest modules (the C tools)."""


class WasmEngine:
    """The engine, its epoch ticker and its running guests; close it (or use ``with``).

    ::

        with WasmEngine() as engine:
            module = wasmtime.Module(engine.engine, wasm_bytes)
    """

    def __init__(
        self,
        *,
        max_memory_bytes: int = 256 << 20,
        one_cpu: bool = True,
        on_open: Callable[[], None] | None = None,
        profile: EngineProfile = MODULES,
    ) -> None:
        self.profile = profile
        """The kind of guests it runs (:data:`MODULES` unless given)."""
        self.max_memory_bytes = max_memory_bytes
        """The largest memory any guest of this engine may have (sizes the pool's slots)."""
        head = "" if profile is MODULES else f"{profile.name},{profile.settings},"
        self.settings = f"{head}epoch,cow,pooling:{max_memory_bytes}"
        """The settings that compiled code depends on (part of the compile cache's key)."""
        self.guest_cpu = GuestCpu(one_cpu)
        """Which CPU guest calls run on (see :mod:`._affinity`)."""
        self.threads = WorkerPool(
            f"toolcage-{profile.name}", on_start=self.guest_cpu.pin, stack_size=profile.thread_stack
        )
        """The daemon threads guests run on, pinned to :attr:`guest_cpu`."""
        self._on_open = on_open
        self._engine: wasmtime.Engine | None = None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._running: set[CallControl] = set()
        self._parked: set[Parked] = set()
        self._ahead: set[CallControl] = set()
        self._releases: list[Callable[[], None]] = []
        self._closing = False
        self._released = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._slots = threading.BoundedSemaphore(profile.instances)
        _open_engines.add(self)

    @property
    def engine(self) -> wasmtime.Engine:
        """The wasmtime engine (created on first use); :class:`EngineClosedError` once closed."""
        engine = self._engine
        if engine is not None and not self._closing:
            return engine
        with self._lock:
            if self._closing:
                raise EngineClosedError("the WASM engine is closed")
            engine = self._engine
            opened = engine is None
            if engine is None:
                config = self.profile.configure(self.max_memory_bytes)
                engine = self._engine = wasmtime.Engine(config)
        if opened and self._on_open is not None:
            self._on_open()
        return engine

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closing

    def on_release(self, release: Callable[[], None]) -> None:
        """Have ``release`` free wasmtime objects made for this engine, before the engine."""
        with self._lock:
            self._releases.append(release)

    def enter(self, control: CallControl, *, ahead: bool = False) -> wasmtime.Engine:
        """Count a guest run as started (and the clock as needed); refused once closed.

        ``ahead``: it prepares an instance to park, which close waits for like any run but
        :meth:`running` leaves out (it is no call's). Returns the engine to run it in, which
        stays valid until :meth:`leave`.
        """
        with self._lock:
            engine = self._engine
            if self._closing or engine is None:
                raise EngineClosedError("the WASM engine is closed")
            self._running.add(control)
            if ahead:
                self._ahead.add(control)
            if self._ticker is None:
                self._ticker = threading.Thread(
                    target=self._tick, args=(engine,), name="toolcage-epoch", daemon=True
                )
                self._ticker.start()
        return engine

    @contextmanager
    def slot(self, wait: bool = True) -> Iterator[bool]:
        """Hold one of the pool's instance slots, waiting while all are taken.

        With ``wait=False`` it does not wait, and says (as the value of ``with``) whether it
        got one.
        """
        got = self._slots.acquire(blocking=wait)
        try:
            yield got
        finally:
            if got:
                self._slots.release()

    def take_slot(self) -> bool:
        """Take one of the pool's instance slots if one is free now; whether it did. What
        :meth:`slot` does without waiting, minus its context manager (a run on the event
        loop's thread takes one per call). Give it back with :meth:`give_slot`."""
        return self._slots.acquire(blocking=False)

    def give_slot(self) -> None:
        """Give back a slot :meth:`take_slot` took."""
        self._slots.release()

    def leave(self, control: CallControl) -> None:
        """Count a guest run as ended (its store closed); the last one may release the engine."""
        with self._lock:
            self._running.discard(control)
            self._ahead.discard(control)
            if self._running:
                return
            self._idle.notify_all()
            release = self._closing and not self._released
            self._released = self._released or release
        if release:
            self._release()

    def running(self) -> int:
        """How many guests of calls are running now (not those prepared ahead or parked)."""
        with self._lock:
            return len(self._running) - len(self._ahead)

    def park(self, spare: Parked) -> bool:
        """Hold ``spare`` until :meth:`unpark` or close; refused (False) once closing."""
        with self._lock:
            if self._closing:
                return False
            self._parked.add(spare)
            return True

    def unpark(self, spare: Parked) -> bool:
        """Take ``spare`` back to run or drop it; False if close dropped it already."""
        with self._lock:
            if spare not in self._parked:
                return False
            self._parked.discard(spare)
            return True

    def parked(self) -> int:
        """How many instances are parked now."""
        return len(self._parked)

    def _tick(self, engine: wasmtime.Engine) -> None:
        # One GIL acquisition a tick, as short as can be: a plain sleep (an Event's wait
        # takes the GIL again for its own bookkeeping) and an add that keeps the GIL (see
        # epoch_ticker). Close waits at most a tick for the loop to see the stop.
        tick, sleep, stopped = epoch_ticker(engine), time.sleep, self._stop.is_set
        while not stopped():
            sleep(TICK)
            tick()

    def close(self, grace: float = CLOSE_GRACE) -> bool:
        """Stop the running guests, wait for them, release the engine; whether all stopped.

        Idempotent. Parked instances are dropped first. Guests still running after ``grace``
        seconds release the engine when the last of them ends.
        """
        with self._lock:
            self._closing = True
            # Under the lock: a guest leaving now must not free the engine before these go.
            parked, self._parked = list(self._parked), set()
            for spare in parked:
                spare.drop()
            for control in self._running:
                control.stop("closed")
            stopped = self._idle.wait_for(lambda: not self._running, grace)
            release = stopped and not self._released
            self._released = self._released or release
        if release:
            self._release()
        return stopped

    def _release(self) -> None:
        self._stop.set()
        self.threads.close()
        ticker = self._ticker
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join()
        for release in self._releases:
            release()
        self._releases.clear()
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    def __enter__(self) -> WasmEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closing", True) and self._engine is not None:
            warnings.warn("WasmEngine was not closed", ResourceWarning, stacklevel=1)
            self.close()


_open_engines: weakref.WeakSet[WasmEngine] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    """Stop what still runs in wasmtime before the interpreter finalizes (module docstring)."""
    until = time.monotonic() + EXIT_GRACE
    for engine in list(_open_engines):
        engine.close(grace=max(0.0, until - time.monotonic()))
    # Each live stdout/stderr of a guest is dropped by a tokio thread through a Python callback.
    while live_output_callbacks() and time.monotonic() < until:
        time.sleep(0.001)
