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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import wasmtime
from toolcage.host_bindings import CallState, HostBinding, current_call
from toolcage.policies import GrantedMount
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

    def __init__(self, engine: WasmEngine, components: ComponentCache | None = None) -> None:
        self.engine = engine
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
    ) -> ComponentRun:
        """Call ``export`` of the component in ``path`` once, in a fresh instance linked
        with ``bindings``, whose host functions see ``state``."""
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

        def work() -> ComponentRun:
            try:
                with self.engine.slot():
                    return self._run_sync(
                        engine, name, component, export, arguments, mounts, limits, control,
                        bindings, state,
                    )  # fmt: skip
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
        run.timeout = timeout
        return run

    def _run_sync(
        self,
        engine: wasmtime.Engine,
        name: str,
        component: Component,
        export: str,
        arguments: Sequence[Any],
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        control: CallControl,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
    ) -> ComponentRun:
        """Run the call in this (guest) thread, which holds an instance slot."""
        stdout = CappedOutput(limits.output_bytes)
        stderr = CappedOutput(limits.output_bytes)
        guest = GuestRun(name, stdout, stderr, memory_limit=limits.memory_bytes)
        run = ComponentRun(guest, stdout, stderr)
        if control.should_stop():  # stopped while it waited for a slot
            run.guest.failure, run.guest.stopped = "stopped before it started", control.reason
            return run
        store = wasmtime.Store(engine)
        token = None
        if state is not None:
            state.landing.attach(control.landed)
            token = current_call.set(state)
        try:
            store.set_limits(memory_size=limits.memory_bytes)
            stop_at_deadlines(store, control.should_stop, STOP_MESSAGE)
            wasi = wasmtime.WasiConfig()
            wasi.argv = [name]  # and no environment: none is inherited or set
            wasi.stdout_custom = stdout.write
            wasi.stderr_custom = stderr.write
            for mount in mounts:
                wasi.preopen_dir(str(mount.host), mount.guest, fs_mutable=mount.writable)
            store.set_wasi(wasi)
            instance = self._linker_of(engine, bindings).instantiate(store, component)
            func = instance.get_func(store, export)
            if func is None:
                run.guest.failure = f"the component exports no function {export!r}"
                return run
            run.result = func(store, *arguments)
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
            store.close()
        return run

    def _release(self) -> None:
        """Free the linkers and the compiled components (the engine is being released)."""
        with self._lock:
            linkers, self._linkers = list(self._linkers.values()), {}
            components = self._components
        for linker in linkers:
            linker.close()
        if components is not None:
            components.close()
