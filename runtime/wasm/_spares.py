"""Component instances prepared ahead: the next call's fresh instance, made before it comes.

Instantiating the CPython component (a store, its WASI context, the linker's instantiate)
takes about as long as running ``print(1)`` in it. So after a call the runner asks for a
*spare*: a thread of this module builds, for the same :class:`SpareKey`, the instance the
next call would build -- a fresh store with the call's memory limit and deadline callback,
a WASI context with fresh stdout/stderr buffers and exactly the key's preopens -- and parks
it. The next call with an equal key takes it, runs its export once, and closes it, as it
would have closed its own. Each instance still serves one call: nothing of one call can
reach another, because a spare has run nothing before it is taken.

What keeps a spare safe to hand out:

- **Keyed by all it was made from**: the component file, the export, the tool's name, the
  granted mounts (host path, guest path, writable), the limits, the linked bindings, and the
  principal the call belongs to. A call whose key differs never gets it; a spare is not
  shared across principals even when their mounts coincide.
- **Its directories are the call's**: the identity (device, inode) of each mount's host
  directory is noted *before* it is preopened; a spare whose directory was replaced since
  (a path now naming another directory) is dropped at take, not run.
- **The call's own deadline**: the store's deadline callback asks the control of whoever
  holds it, which the taker sets to its call's control, so the epoch deadline runs from the
  call's start, not from the spare's preparation.

Bounded: at most one spare per key and :data:`~._component_engine.SPARES` in all (the least
recently made goes to make room); the pool has slots for them beyond the calls' own, so
sixteen callers never wait for a parked spare. While it is made a spare is a guest of the
engine prepared ahead (close stops and awaits it, as a running one, but it is no call's);
once made it is *parked* (:meth:`~._engine.WasmEngine.park`): close drops it first.

Made after a call, a spare is ready for a call that comes later; a call that comes at once,
while no other call runs, waits (at most :data:`TAKE_WAIT`) for the one being made, and
:data:`PER_KEY` spares per key keep one ready for calls back to back.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import wasmtime
from toolcage.policies import GrantedMount
from wasmtime.component import Func

from .._threads import start_with_stack
from ._component_engine import SPARES
from ._control import CallControl
from ._engine import EngineClosedError, Parked, WasmEngine
from ._output import CappedOutput

PER_KEY = 2
"""Spares of one key at once: a run of calls finds one ready while the next is made."""

TAKE_WAIT = 0.5
"""Seconds a call waits for the spare of its key being made before it makes its own."""

IDLE_SECONDS = 10.0
"""The preparing thread ends after this long without work (a new one starts on demand)."""


@dataclass(frozen=True, slots=True)
class SpareKey:
    """Everything an instance is made from: only a call with an equal key may take it."""

    path: str
    export: str
    name: str
    mounts: tuple[GrantedMount, ...]
    memory_bytes: int
    output_bytes: int
    bindings: tuple[str, ...]
    owner: str
    """The principal's key (:meth:`~toolcage.policies.Principal.key`)."""


def directories(mounts: Sequence[GrantedMount]) -> tuple[tuple[int, int], ...] | None:
    """The (device, inode) of each mount's host directory; None if one is missing."""
    try:
        found = [os.stat(mount.host) for mount in mounts]
    except OSError:
        return None
    return tuple((st.st_dev, st.st_ino) for st in found)


class Prepared(Parked):
    """A store with an instantiated component, whose export has not run."""

    def __init__(
        self,
        store: wasmtime.Store,
        func: Func | None,
        stdout: CappedOutput,
        stderr: CappedOutput,
        control: CallControl,
        dirs: tuple[tuple[int, int], ...] | None = None,
    ) -> None:
        self.store = store
        self.func = func
        """The export (None when the component has none of that name)."""
        self.stdout = stdout
        self.stderr = stderr
        self.control = control
        """Whose deadline the store's callback follows: the taker sets its call's."""
        self.dirs = dirs
        """The mounts' directory identities when it was made (see the module docstring)."""

    def should_stop(self) -> bool:
        return self.control.should_stop()

    def drop(self) -> None:
        self.store.close()


Make = Callable[[CallControl], Prepared]
"""Makes a spare in this (guest) thread; its control's deadline bounds instantiation."""


class Spares:
    """The spares of one runner (see the module docstring).

    ::

        spare = spares.take(key)  # in a guest thread: a parked instance, or None
        ...
        spares.want(key, make, timeout)  # after the call: make the next one
    """

    def __init__(self, engine: WasmEngine, *, limit: int = SPARES, thread_stack: int | None = None):
        self.engine = engine
        self.limit = limit
        self._thread_stack = thread_stack
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._parked: deque[tuple[SpareKey, Prepared]] = deque()  # oldest first
        self._making: list[SpareKey] = []
        self._queue: deque[tuple[SpareKey, Make, float]] = deque()
        self._thread: threading.Thread | None = None
        self._closed = False

    def take(self, key: SpareKey) -> Prepared | None:
        """The spare of ``key`` for a call to run once, or None (the call makes its own)."""
        with self._changed:
            # Only a call running alone waits: calls at once would queue behind one thread.
            if key in self._making and not self._has(key) and self.engine.running() <= 1:
                self._changed.wait_for(lambda: self._has(key) or key not in self._making, TAKE_WAIT)
            spare = self._pop(key)
        if spare is None or not self.engine.unpark(spare):
            return None  # none, or close dropped it
        if spare.dirs != directories(key.mounts):
            spare.drop()
            return None
        return spare

    def want(self, key: SpareKey, make: Make, timeout: float) -> None:
        """Have spares of ``key`` made up to :data:`PER_KEY`, as far as the limit allows."""
        with self._lock:
            if self._closed:
                return
            have = self._making.count(key) + sum(1 for k, _ in self._parked if k == key)
            for _ in range(PER_KEY - have):
                if len(self._parked) + len(self._making) >= self.limit:
                    if not self._parked or self._parked[0][0] == key:
                        break
                    evicted = self._parked.popleft()[1]
                    if self.engine.unpark(evicted):
                        evicted.drop()  # before another is made: the pool has no slot more
                self._making.append(key)
                self._queue.append((key, make, timeout))
            if self._queue and self._thread is None:
                self._thread = self._start()
            self._changed.notify_all()

    def close(self) -> None:
        """Drop the parked spares and end the preparing thread (the engine is released)."""
        with self._changed:
            self._closed = True
            parked, self._parked = list(self._parked), deque()
            self._queue.clear()
            self._changed.notify_all()
        for _, spare in parked:
            if self.engine.unpark(spare):
                spare.drop()

    def parked(self, owner: str) -> int:
        """How many spares of the principal keyed ``owner`` are parked now."""
        with self._lock:
            return sum(1 for key, _ in self._parked if key.owner == owner)

    def _has(self, key: SpareKey) -> bool:
        return any(k == key for k, _ in self._parked)

    def _pop(self, key: SpareKey) -> Prepared | None:
        for index, (k, spare) in enumerate(self._parked):
            if k == key:
                del self._parked[index]
                return spare
        return None

    def _start(self) -> threading.Thread:
        thread = threading.Thread(target=self._work, name="toolcage-component-spare", daemon=True)
        # A component may run wasm while it is instantiated: the guest threads' deep stack.
        start_with_stack(thread, self._thread_stack)
        return thread

    def _work(self) -> None:
        self.engine.guest_cpu.pin()
        while True:
            with self._changed:
                if not self._queue and not self._closed:
                    self._changed.wait(IDLE_SECONDS)
                if self._closed or not self._queue:
                    self._thread = None
                    return
                key, make, timeout = self._queue.popleft()
            spare = self._make(make, timeout)
            with self._changed:
                self._making.remove(key)
                if spare is not None and not self._closed:
                    self._parked.append((key, spare))
                    spare = None
                self._changed.notify_all()
            if spare is not None and self.engine.unpark(spare):
                spare.drop()

    def _make(self, make: Make, timeout: float) -> Prepared | None:
        """A spare, made as a running guest of the engine and parked there before it ends."""
        control = CallControl(time.monotonic() + timeout)
        try:
            self.engine.enter(control, ahead=True)
        except EngineClosedError:
            return None
        try:
            spare = make(control)
            if not self.engine.park(spare):
                spare.drop()
                return None
            return spare
        except (wasmtime.WasmtimeError, wasmtime.Trap, OSError):
            return None  # the call makes its own, and reports what fails
        finally:
            self.engine.leave(control)
