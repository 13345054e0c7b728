"""Running one call of a WebAssembly component: a fresh store and instance, WASI, limits.

Per engine the runner keeps a component :class:`~wasmtime.component.Linker` per set of
granted host bindings, holding WASI 0.2 and their ``toolcage:tool`` interfaces and nothing
else (:mod:`._component_link`; ``python_exec`` gets WASI alone), and a
:class:`~._components.ComponentCache`. Per call it builds what must be fresh: a
:class:`wasmtime.Store` with the call's memory limit and the epoch deadline callback of
:mod:`._control` (the deadline is the tool's timeout or the pipeline's, the earlier, as for
modules), a WASI context with ``argv``, **no environment**, stdout and stderr into
:class:`~._output.CappedOutput` buffers (every write is accepted, the first ``cap`` bytes
kept and the rest counted) and exactly the granted mounts as preopens (read-only ones with
``fs_mutable=False``); then it instantiates the component, calls its export with the given
arguments (with the call's :class:`~toolcage.host_bindings.CallState` current, for the host
functions) and closes the store, however the call ended. What the run left is plain data
(:class:`ComponentRun`): the lifted result and the :class:`~._outcome.GuestRun` that
:func:`~._outcome.outcome` maps onto the error envelope.

Instantiating is half the cost of a short call, so it is done ahead: after a call of a
principal's, the next fresh instance for the same component, mounts, limits and bindings is
made and parked (:mod:`._spares`), and that principal's next such call runs in it -- once,
as in an instance of its own; a call finding none makes its own.

Where it runs: always on the component engine's own guest threads, whose deep native
stacks the guest's wasm stack needs (:mod:`._component_engine`); never on the event loop's
thread. At most :data:`~._component_engine.INSTANCES` calls of an engine run at once; the
others wait in their threads for a slot. A first call of a component waits for its compile
(~6 s, once per machine and engine settings) before its deadline is taken, so the compile
is not charged to the guest -- though it is to the pipeline's deadline of that call. A
cancelled call stops its guest at the next epoch tick, as for modules.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import wasmtime
from toolcage.host_bindings import CallState, HostBinding, current_call
from toolcage.policies import GrantedMount, Principal
from wasmtime.component import Component, Linker

from .._deadline import claim_deadline
from .._errors import ToolCancelledError
from .._threads import run_in_worker
from ._capi import stop_at_deadlines
from ._component_link import component_linker
from ._components import ComponentCache
from ._control import STOP_MESSAGE, CallControl
from ._engine import EngineClosedError, WasmEngine
from ._outcome import GuestRun
from ._output import CappedOutput
from ._runner import CANCEL_WAIT, GuestLimits
from ._spares import Prepared, SpareKey, Spares, directories


@dataclass(slots=True)
class ComponentRun:
    """What one component call left behind, as plain data."""

    guest: GuestRun
    """How the guest ended (mapped by :func:`~._outcome.outcome`)."""
    stdout: CappedOutput
    """Its standard output."""
    stderr: CappedOutput
    """Its standard error."""
    result: Any = None
    """The export's result as wasmtime-py lifted it (a ``Variant`` for a WIT ``result``)."""
    timeout: float = 0.0
    """The timeout the run's deadline stood for (for messages)."""


class ComponentRunner:
    """Runs components of one (component) engine.

    ::

        with WasmEngine(profile=COMPONENTS) as engine:
            runner = ComponentRunner(engine)
            run = await runner.run("python_exec", path, "run", ["print(1)"], mounts, limits)
    """

    def __init__(
        self, engine: WasmEngine, components: ComponentCache | None = None, *, ahead: bool = True
    ) -> None:
        self.engine = engine
        self.ahead = ahead
        """Whether calls run in instances prepared ahead (:attr:`spares`)."""
        self.spares = Spares(engine, thread_stack=engine.profile.thread_stack)
        """The instances prepared ahead (:mod:`._spares`)."""
        self._components = components
        self._linkers: dict[tuple[str, ...], Linker] = {}
        self._lock = threading.Lock()
        engine.on_release(self._release)

    @property
    def components(self) -> ComponentCache:
        """Where compiled components come from (the on-disk cache by default)."""
        with self._lock:
            if self._components is None:
                engine = self.engine
                self._components = ComponentCache(engine.engine, settings=engine.settings)
            return self._components

    def _linker_of(self, engine: wasmtime.Engine, bindings: Sequence[HostBinding]) -> Linker:
        key = tuple(binding.name for binding in bindings)
        with self._lock:
            linker = self._linkers.get(key)
            if linker is None:
                linker = self._linkers[key] = component_linker(engine, bindings)
            return linker

    async def prepare(self, name: str, path: Path) -> Component:
        """The compiled component of ``path``, compiled (once) in a guest thread.

        The compile counts as a running guest of the engine, so closing the runtime waits
        for it before the engine is freed. A component compiled already is returned at once,
        without the trip to a guest thread (every call after the first).
        """
        with self._lock:
            components = self._components
        compiled = None if components is None else components.compiled(path)
        if compiled is not None:
            return compiled
        control = CallControl(math.inf)
        try:
            components = self.components
            self.engine.enter(control)
        except EngineClosedError:
            raise ToolCancelledError(f"Tool {name} was cancelled: the runtime is closed") from None

        def compile_once() -> Component:
            try:
                return components.get(path)
            finally:
                self.engine.leave(control)

        return await self.engine.threads.run(compile_once)

    async def run(
        self,
        name: str,
        path: Path,
        export: str,
        arguments: Sequence[Any],
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        *,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
        owner: Principal | None = None,
    ) -> ComponentRun:
        """Call ``export`` of the component in ``path`` once, in a fresh instance linked
        with ``bindings``, whose host functions see ``state``; ``owner`` (the principal,
        else the state's) keys the instance prepared ahead for its next call."""
        component = await self.prepare(name, path)
        at = time.monotonic() + limits.timeout
        deadline = claim_deadline()
        timeout = limits.timeout
        if deadline is not None and deadline.at < at:
            at, timeout = deadline.at, deadline.seconds
        control = CallControl(at)
        try:
            engine = self.engine.enter(control)
        except EngineClosedError:
            raise ToolCancelledError(f"Tool {name} was cancelled: the runtime is closed") from None
        done = threading.Event()
        if owner is None and state is not None:
            owner = state.principal
        key = SpareKey(
            str(path), export, name, tuple(mounts), limits.memory_bytes, limits.output_bytes,
            tuple(binding.name for binding in bindings), "" if owner is None else owner.key(),
        )  # fmt: skip
        spares = self.spares if self.ahead and owner is not None else None

        def make(making: CallControl) -> Prepared:
            return self._instantiate(engine, name, component, export, mounts, limits, making,
                                     bindings)  # fmt: skip

        def work() -> ComponentRun:
            try:
                with self.engine.slot():
                    spare = None if spares is None else spares.take(key)
                    return self._run_sync(
                        name, export, arguments, limits, control, make, spare, state
                    )
            finally:
                self.engine.leave(control)
                done.set()

        try:
            run = await self.engine.threads.run(work)
        except anyio.get_cancelled_exc_class():
            control.stop("cancelled")
            with anyio.CancelScope(shield=True):
                await run_in_worker(lambda: done.wait(CANCEL_WAIT))
            raise
        if spares is not None:
            spares.want(key, make, limits.timeout)
        run.timeout = timeout
        return run

    def _instantiate(
        self,
        engine: wasmtime.Engine,
        name: str,
        component: Component,
        export: str,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        control: CallControl,
        bindings: Sequence[HostBinding],
    ) -> Prepared:
        """A fresh store and instance of ``component``, ready to call ``export`` once."""
        dirs = directories(mounts)  # before the preopens (see _spares)
        store = wasmtime.Store(engine)
        stdout = CappedOutput(limits.output_bytes)
        stderr = CappedOutput(limits.output_bytes)
        prepared = Prepared(store, None, stdout, stderr, control, dirs)
        try:
            store.set_limits(memory_size=limits.memory_bytes)
            # The callback asks whoever holds the instance: the call that takes it.
            stop_at_deadlines(store, prepared.should_stop, STOP_MESSAGE)
            wasi = wasmtime.WasiConfig()
            wasi.argv = [name]  # and no environment: none is inherited or set
            wasi.stdout_custom = stdout.write
            wasi.stderr_custom = stderr.write
            for mount in mounts:
                wasi.preopen_dir(str(mount.host), mount.guest, fs_mutable=mount.writable)
            store.set_wasi(wasi)
            instance = self._linker_of(engine, bindings).instantiate(store, component)
            prepared.func = instance.get_func(store, export)
        except BaseException:
            store.close()
            raise
        return prepared

    def _run_sync(
        self,
        name: str,
        export: str,
        arguments: Sequence[Any],
        limits: GuestLimits,
        control: CallControl,
        make: Callable[[CallControl], Prepared],
        spare: Prepared | None,
        state: CallState | None,
    ) -> ComponentRun:
        """Run the call in this (guest) thread, which holds an instance slot: in ``spare``,
        else in an instance it makes now."""
        if control.should_stop():  # stopped while it waited for a slot
            if spare is not None:
                spare.drop()
            run = _blank(name, limits)
            run.guest.failure, run.guest.stopped = "stopped before it started", control.reason
            return run
        token = None
        if state is not None:
            state.landing.attach(control.landed)
            token = current_call.set(state)
        prepared = spare
        run = _blank(name, limits)  # until there is an instance, with its outputs
        try:
            if prepared is None:
                prepared = make(control)
            prepared.control = control  # the epoch deadline is the call's, from now
            stdout, stderr = prepared.stdout, prepared.stderr
            guest = GuestRun(name, stdout, stderr, memory_limit=limits.memory_bytes)
            run = ComponentRun(guest, stdout, stderr)
            if prepared.func is None:
                run.guest.failure = f"the component exports no function {export!r}"
                return run
            run.result = prepared.func(prepared.store, *arguments)
        except (wasmtime.WasmtimeError, wasmtime.Trap) as exc:
            run.guest.failure = str(exc)  # plain text: the exception and its frames die here
        except TypeError as exc:  # an operator's build whose export takes other arguments
            run.guest.failure = f"the component's {export!r} does not fit its caller: {exc}"
        finally:
            run.guest.stopped = control.reason if run.guest.failed else None
            if token is not None:
                current_call.reset(token)
            if state is not None:
                state.release()  # what host functions opened for the call
            # The store (its memories, descriptors and pool slot) goes now.
            if prepared is not None:
                prepared.drop()
        return run

    def _release(self) -> None:
        """Free the spares, linkers and compiled components (the engine is being released)."""
        self.spares.close()
        with self._lock:
            linkers, self._linkers = list(self._linkers.values()), {}
            components = self._components
        for linker in linkers:
            linker.close()
        if components is not None:
            components.close()


def _blank(name: str, limits: GuestLimits) -> ComponentRun:
    """The run of a call that got no instance (its outputs stay empty)."""
    stdout, stderr = CappedOutput(limits.output_bytes), CappedOutput(limits.output_bytes)
    return ComponentRun(GuestRun(name, stdout, stderr, memory_limit=limits.memory_bytes),
                        stdout, stderr)  # fmt: skip
