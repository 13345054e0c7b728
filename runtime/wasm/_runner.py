"""Running one guest call: a fresh store and instance, the granted mounts, the limits.

Per tool (and set of granted host bindings) the runner keeps one :class:`wasmtime.Linker`
with WASI and the bindings defined, and its ``instantiate_pre`` of the module, so import
resolution happens once. Per call it builds only what must be fresh: a store with a memory
limit and an epoch deadline callback (:mod:`._control`), a WASI context with exactly the
granted preopens (read-only ones with ``fs_mutable=False``), the arguments document as
``argv[1]`` and on stdin (argv costs the guest no I/O: reading stdin is a trip through
wasmtime's file-operation threads, ~0.1 ms), no environment, and stdout/stderr captured
with a cap.

The guest's deadline is its own timeout, or the pipeline's deadline for the call when that
comes first (:func:`~toolcage.runtime._deadline.claim_deadline`): the guest is stopped
inside wasmtime by then and the call reports its own timeout. The store is closed when the
run ends, however it ends, and what the run left is kept as plain data (:class:`GuestRun`),
never as wasmtime objects: a failed call's result holds no store, memory or pool slot.

The guest runs on a daemon worker thread (:mod:`toolcage.runtime._threads`) so the event
loop never blocks, independent calls run in parallel and a guest stuck in a host call
cannot keep the process from exiting; it is pinned for the call to the engine's guest CPU
(:mod:`._affinity`). At most :data:`~._engine.POOL_INSTANCES` guests of an engine run at once
(the pooling allocator's slots); a call beyond that waits in its thread for a slot. When the
awaiting task is cancelled the guest is stopped at the next epoch tick and the cancellation
waits for it (briefly), so nothing keeps running unobserved.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import anyio
import wasmtime
from toolcage.host_bindings import CallState, HostBinding, current_call
from toolcage.policies import GrantedMount

from .._deadline import claim_deadline
from .._errors import ToolCancelledError, UsageError
from .._result import ToolResult
from .._threads import run_in_worker
from ._capi import export, set_stdin_bytes
from ._control import CallControl, attach
from ._engine import EngineClosedError, WasmEngine
from ._modules import ModuleCache
from ._outcome import GuestRun, outcome
from ._output import CappedOutput

CANCEL_WAIT = 1.0
"""Seconds a cancelled call waits for its guest to stop (it stops at the next tick unless
it is inside a host call)."""


class LinkError(UsageError):
    """A guest imports something its granted host bindings (and WASI) do not provide."""


@dataclass(frozen=True, slots=True)
class GuestLimits:
    """The resource limits of one guest call."""

    timeout: float
    """Seconds before the guest is stopped."""
    memory_bytes: int = 64 << 20
    """Largest linear memory the guest may grow to."""
    output_bytes: int = 1 << 20
    """stdout bytes kept (stderr keeps a sixteenth of it); the rest is dropped."""


class WasmToolRunner:
    """Runs guest modules of one engine.

    ::

        with WasmEngine() as engine:
            runner = WasmToolRunner(engine)
            result = await runner.run("file_read", b'{"path": "/workspace/a.txt"}',
                                      mounts, GuestLimits(timeout=10))
    """

    def __init__(self, engine: WasmEngine, modules: ModuleCache | None = None) -> None:
        self.engine = engine
        self._modules = modules
        self._pres: dict[tuple[str, tuple[str, ...]], wasmtime.InstancePre] = {}
        self._lock = threading.Lock()
        self._modules_lock = threading.Lock()
        engine.on_release(self._release)

    @property
    def modules(self) -> ModuleCache:
        """Where compiled modules come from (the engine's on-disk cache by default)."""
        modules = self._modules
        if modules is None:
            with self._modules_lock:
                modules = self._modules
                if modules is None:
                    modules = ModuleCache(self.engine.engine, settings=self.engine.settings)
                    self._modules = modules
        return modules

    def prepare(
        self, name: str, bindings: Sequence[HostBinding] = (), module: wasmtime.Module | None = None
    ) -> wasmtime.InstancePre:
        """The linked, pre-instantiated module of tool ``name`` with ``bindings`` granted.

        An import the granted bindings (and WASI) do not provide fails here, with a message
        naming it: an ungranted capability is absent, not refused at call time.
        """
        key = (name, tuple(b.name for b in bindings))
        pre = self._pres.get(key)
        if pre is not None:
            return pre
        with self._lock:
            pre = self._pres.get(key)
            if pre is None:
                module = self.modules.get(name) if module is None else module
                pre = _link(name, self.engine.engine, module, bindings)
                self._pres[key] = pre
        return pre

    async def run(
        self,
        name: str,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        *,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
    ) -> ToolResult:
        """Run tool ``name`` once with the JSON ``arguments``; its result, or its ToolError."""
        control, timeout = _control(limits.timeout)
        pre, engine = self._enter(name, bindings, control)
        done = threading.Event()

        def work() -> GuestRun:
            try:
                with self.engine.guest_cpu.pinned():
                    return self._run_sync(
                        name, engine, pre, arguments, mounts, limits, control, state
                    )
            finally:
                self.engine.leave(control)
                done.set()

        try:
            run = await run_in_worker(work)
        except anyio.get_cancelled_exc_class():
            control.stop("cancelled")
            with anyio.CancelScope(shield=True):
                await run_in_worker(lambda: done.wait(CANCEL_WAIT))
            raise
        return outcome(run, timeout)

    def run_sync(
        self,
        name: str,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        *,
        bindings: Sequence[HostBinding] = (),
        state: CallState | None = None,
    ) -> ToolResult:
        """:meth:`run` in the calling thread (benchmarks, synchronous embedders)."""
        control, timeout = _control(limits.timeout)
        pre, engine = self._enter(name, bindings, control)
        try:
            with self.engine.guest_cpu.pinned():
                run = self._run_sync(name, engine, pre, arguments, mounts, limits, control, state)
        finally:
            self.engine.leave(control)
        return outcome(run, timeout)

    def _enter(
        self, name: str, bindings: Sequence[HostBinding], control: CallControl
    ) -> tuple[wasmtime.InstancePre, wasmtime.Engine]:
        """The prepared module and its engine, the run counted; refused once closed."""
        try:
            pre = self.prepare(name, bindings)
            return pre, self.engine.enter(control)
        except EngineClosedError:
            raise ToolCancelledError(f"Tool {name} was cancelled: the runtime is closed") from None

    def _release(self) -> None:
        """Free the prepared and compiled modules (the engine is being released)."""
        with self._lock:
            pres, self._pres = list(self._pres.values()), {}
            modules = self._modules
        for pre in pres:
            pre.close()
        if modules is not None:
            modules.close()

    def _run_sync(
        self,
        name: str,
        engine: wasmtime.Engine,
        pre: wasmtime.InstancePre,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        control: CallControl,
        state: CallState | None,
    ) -> GuestRun:
        stdout = CappedOutput(limits.output_bytes)
        stderr = CappedOutput(max(4096, limits.output_bytes // 16))
        run = GuestRun(name, stdout, stderr, memory_limit=limits.memory_bytes)
        with self.engine.slot():
            if control.should_stop():  # stopped while it waited for a slot
                run.failure, run.stopped = "stopped before it started", control.reason
                return run
            store = wasmtime.Store(engine)
            token = current_call.set(state) if state is not None else None
            try:
                store.set_limits(memory_size=limits.memory_bytes)
                attach(store, control)
                store.set_wasi(_wasi(name, arguments, mounts, stdout, stderr))
                _run_guest(name, store, pre, run)
            finally:
                run.stopped = control.reason if run.failed else None
                if token is not None:
                    current_call.reset(token)
                # The store (its memory, descriptors and pool slot) goes now, not when the
                # last reference to an exception or frame that saw it is dropped.
                store.close()
        return run


def _control(timeout: float) -> tuple[CallControl, float]:
    """The stop switch of a new run: its own timeout or the call's deadline, the earlier."""
    at = time.monotonic() + timeout
    deadline = claim_deadline()
    if deadline is not None and deadline.at < at:
        return CallControl(deadline.at), deadline.seconds
    return CallControl(at), timeout


def _link(
    name: str, engine: wasmtime.Engine, module: wasmtime.Module, bindings: Sequence[HostBinding]
) -> wasmtime.InstancePre:
    linker = wasmtime.Linker(engine)
    try:
        linker.define_wasi()
        for binding in bindings:
            binding.define(linker)
        try:
            return linker.instantiate_pre(module)
        except wasmtime.WasmtimeError as exc:
            reason = str(exc).strip().splitlines()[0]
        granted = ", ".join(b.name for b in bindings) or "none"
        raise LinkError(
            f"WASM tool {name} cannot be linked: {reason} (granted host bindings: {granted})"
        )
    finally:
        linker.close()


def _run_guest(name: str, store: wasmtime.Store, pre: wasmtime.InstancePre, run: GuestRun) -> None:
    """Instantiate and run the guest in ``store``, noting in ``run`` how it ended."""
    instance = None
    try:
        instance = pre.instantiate(store)
        start = export(store, instance, b"_start")
        if not isinstance(start, wasmtime.Func):
            raise UsageError(f"WASM tool {name} has no _start function (not a command)")
        try:
            start(store)
        except wasmtime.ExitTrap as exc:
            if exc.code != 0:
                run.exit_code = exc.code
                return
        run.document = _result_document(store, instance)
    except (wasmtime.WasmtimeError, wasmtime.Trap) as exc:
        run.failure = str(exc)  # plain text: the exception and its frames die here
        if instance is not None:
            memory = export(store, instance, b"memory")
            if isinstance(memory, wasmtime.Memory):
                run.memory_bytes = memory.data_len(store)


def _result_document(store: wasmtime.Store, instance: wasmtime.Instance) -> bytes | None:
    """The result the SDK left in linear memory (see toolcage.h), if the guest did that."""
    getter = export(store, instance, b"toolcage_result")
    memory = export(store, instance, b"memory")
    if not isinstance(getter, wasmtime.Func) or not isinstance(memory, wasmtime.Memory):
        return None
    packed = getter(store)
    if not isinstance(packed, int) or packed == 0:
        return None
    address, size = (packed >> 32) & 0xFFFFFFFF, packed & 0xFFFFFFFF
    if address + size > memory.data_len(store):
        return None
    return bytes(memory.read(store, address, address + size))


def _wasi(
    name: str,
    arguments: bytes,
    mounts: Sequence[GrantedMount],
    stdout: CappedOutput,
    stderr: CappedOutput,
) -> wasmtime.WasiConfig:
    wasi = wasmtime.WasiConfig()
    # JSON text never holds a raw NUL, so it survives as a C string.
    wasi.argv = [name, arguments.decode("utf-8")] if arguments else [name]
    set_stdin_bytes(wasi, arguments)
    wasi.stdout_custom = stdout.write
    wasi.stderr_custom = stderr.write
    for mount in mounts:
        wasi.preopen_dir(str(mount.host), mount.guest, mount.writable)
    return wasi
