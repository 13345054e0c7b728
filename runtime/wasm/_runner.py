"""Running one guest call: a fresh store and instance, the granted mounts, the limits.

Per tool (and set of granted host bindings) the runner keeps one :class:`wasmtime.Linker`
with WASI and the bindings defined, and its ``instantiate_pre`` of the module, so import
resolution happens once. Per call it builds only what must be fresh: a store with a memory
limit and an epoch deadline callback (:mod:`._control`), a WASI context with exactly the
granted preopens (read-only ones with ``fs_mutable=False``), the arguments document as
``argv[1]`` and on stdin (argv costs the guest no I/O: reading stdin is a trip through
wasmtime's file-operation threads, ~0.1 ms), no environment, and stdout/stderr captured
with a cap.

The guest runs in a worker thread (:func:`anyio.to_thread.run_sync`) so the event loop
never blocks and independent calls run in parallel, pinned for the call to the engine's
guest CPU (:mod:`._affinity`). When the awaiting task is cancelled the
guest is stopped at the next epoch tick and the cancellation waits for it, so nothing keeps
running unobserved.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio
import wasmtime
from toolcage.host_bindings import CallState, HostBinding, current_call
from toolcage.policies import GrantedMount
from wasmtime import _ffi as ffi
from wasmtime._extern import wrap_extern

from .._errors import UsageError
from .._result import ToolResult
from ._control import CallControl, attach
from ._engine import WasmEngine
from ._modules import ModuleCache
from ._outcome import GuestRun, outcome
from ._output import CappedOutput


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

    def __init__(
        self,
        engine: WasmEngine,
        modules: ModuleCache | None = None,
        *,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        self.engine = engine
        self._on_start = on_start
        self.modules = (
            ModuleCache(engine.engine, settings=engine.settings) if modules is None else modules
        )
        """Where compiled modules come from."""
        self._pres: dict[tuple[str, tuple[str, ...]], wasmtime.InstancePre] = {}
        self._lock = threading.Lock()

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
                linker = wasmtime.Linker(self.engine.engine)
                linker.define_wasi()
                for binding in bindings:
                    binding.define(linker)
                try:
                    pre = linker.instantiate_pre(module)
                except wasmtime.WasmtimeError as exc:
                    granted = ", ".join(key[1]) or "none"
                    raise LinkError(
                        f"WASM tool {name} cannot be linked: {str(exc).strip().splitlines()[0]} "
                        f"(granted host bindings: {granted})"
                    ) from exc
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
        pre = self.prepare(name, bindings)
        self._start()
        control = CallControl(time.monotonic() + limits.timeout)
        done = threading.Event()

        def work() -> GuestRun:
            try:
                with self.engine.guest_cpu.pinned():
                    return self._run_sync(name, pre, arguments, mounts, limits, control, state)
            finally:
                done.set()

        try:
            run = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            control.stop("cancelled")
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(done.wait, 1.0)
            raise
        return outcome(run)

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
        pre = self.prepare(name, bindings)
        self._start()
        control = CallControl(time.monotonic() + limits.timeout)
        with self.engine.guest_cpu.pinned():
            run = self._run_sync(name, pre, arguments, mounts, limits, control, state)
        return outcome(run)

    def _start(self) -> None:
        if self.engine.start() and self._on_start is not None:
            self._on_start()

    def _run_sync(
        self,
        name: str,
        pre: wasmtime.InstancePre,
        arguments: bytes,
        mounts: Sequence[GrantedMount],
        limits: GuestLimits,
        control: CallControl,
        state: CallState | None,
    ) -> GuestRun:
        stdout = CappedOutput(limits.output_bytes)
        stderr = CappedOutput(max(4096, limits.output_bytes // 16))
        run = GuestRun(name, limits.timeout, stdout, stderr, memory_limit=limits.memory_bytes)
        store = wasmtime.Store(self.engine.engine)
        store.set_limits(memory_size=limits.memory_bytes)
        attach(store, control)
        store.set_wasi(_wasi(name, arguments, mounts, stdout, stderr))
        token = current_call.set(state) if state is not None else None
        instance = None
        try:
            instance = pre.instantiate(store)
            start = _export(store, instance, b"_start")
            if not isinstance(start, wasmtime.Func):
                raise UsageError(f"WASM tool {name} has no _start function (not a command)")
            try:
                start(store)
            except wasmtime.ExitTrap as exc:
                if exc.code != 0:
                    raise
            run.document = _result_document(store, instance)
        except (wasmtime.WasmtimeError, wasmtime.Trap) as exc:
            run.error = exc
            run.stopped = control.reason
            if instance is not None:
                memory = _export(store, instance, b"memory")
                if isinstance(memory, wasmtime.Memory):
                    run.memory_bytes = memory.data_len(store)
        finally:
            if token is not None:
                current_call.reset(token)
        return run


def _export(store: wasmtime.Store, instance: wasmtime.Instance, name: bytes) -> object:
    # One export by name; Instance.exports() would wrap every export of the module.
    item = ffi.wasmtime_extern_t()
    found = ffi.wasmtime_instance_export_get(
        store._context(), ctypes.byref(instance._instance), name, len(name), ctypes.byref(item)
    )
    return wrap_extern(item) if found else None


def _result_document(store: wasmtime.Store, instance: wasmtime.Instance) -> bytes | None:
    """The result the SDK left in linear memory (see toolcage.h), if the guest did that."""
    getter = _export(store, instance, b"toolcage_result")
    memory = _export(store, instance, b"memory")
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
    _set_stdin_bytes(wasi, arguments)
    wasi.stdout_custom = stdout.write
    wasi.stderr_custom = stderr.write
    for mount in mounts:
        wasi.preopen_dir(str(mount.host), mount.guest, mount.writable)
    return wasi


def _set_stdin_bytes(wasi: wasmtime.WasiConfig, data: bytes) -> None:
    # wasmtime-py exposes only stdin_file; the C API also takes bytes (and owns the vector).
    vec = ffi.wasm_byte_vec_t()
    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    ffi.wasm_byte_vec_new(ctypes.byref(vec), len(data), buffer)
    ffi.wasi_config_set_stdin_bytes(wasi.ptr(), ctypes.byref(vec))
