"""Everything toolcage takes from wasmtime-py beyond its public API, in one module.

wasmtime-py wraps wasmtime's C API but leaves out a few parts toolcage needs: instantiating,
calling one export by name and reading linear memory without wrapping every handle, export
and value in Python objects (``Instance.exports()`` wraps every export of the module, and a
``Func`` call builds a value object per argument and result), stdin from bytes
(only ``stdin_file`` is exposed), the pooling allocator (for modules and components), the
async stack size (which bounds ``max_wasm_stack``), an epoch deadline callback (only a
fixed deadline is exposed; components' stores get it too) and a way to tell when wasmtime
has dropped a guest's output callbacks. This module reaches them through wasmtime-py's
private modules (``_ffi``, ``_wasi``), private attributes (``Store._context()``, the
``_from_ptr`` constructors of wasmtime-py's exceptions, and the exception a Python host
function raised) and the C handles behind ``ptr()``. No other toolcage module imports
``wasmtime._*`` or calls the C API.

These internals can change in any wasmtime release, so the module states the version it was
written against (:data:`WASMTIME_VERSION`, the pin in ``pyproject.toml``) and
``tests/runtime/wasm/test_capi.py`` checks the installed version, the shape of every symbol
used here (the C signatures wasmtime-py declares for them), that no other module reaches
past the public API, and what each function here does with real wasmtime objects.

:func:`instantiate`, :func:`call_export`, :func:`read_memory` and :func:`set_stdin_bytes` run on
every guest call; they build nothing beyond the arguments of the C calls they make, and wrap
an error in wasmtime-py's own exception classes only when there is one.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import struct
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime import _func, _wasi

WASMTIME_VERSION = "50.0.1"
"""The wasmtime-py release this module was written against (the pin in ``pyproject.toml``)."""

StopCheck: TypeAlias = Callable[[], bool]
"""Asked at an epoch deadline whether the guest should stop now."""


Instance: TypeAlias = Any
"""A C instance handle (``wasmtime_instance_t``) from :meth:`GuestStore.instantiate`."""

_EXTERN_FUNC: Any = ffi.WASMTIME_EXTERN_FUNC.value
_EXTERN_MEMORY: Any = ffi.WASMTIME_EXTERN_MEMORY.value
_I32: Any = ffi.WASMTIME_I32.value
_I64: Any = ffi.WASMTIME_I64.value
_NO_FINALIZER = ctypes.cast(0, ctypes.CFUNCTYPE(None, ctypes.c_void_p))
_CHAR_PP = ctypes.POINTER(ctypes.POINTER(ctypes.c_char))

NOT_A_FUNCTION = object()
"""What :meth:`GuestStore.call` returns when the instance exports no function by that name."""


class GuestStore:
    """A store for one guest run, made with C calls only: freed by :meth:`close`.

    It has a memory limit and, at every epoch deadline, asks ``should_stop()`` whether its
    guest must stop: a stopped guest unwinds with a :class:`wasmtime.WasmtimeError` whose
    text holds ``message``, otherwise the deadline moves one tick on. The first deadline is
    one tick away.
    """

    __slots__ = ("_context", "_store")

    _store: Any

    def __init__(
        self, engine: wasmtime.Engine, memory_bytes: int, should_stop: StopCheck, message: bytes
    ) -> None:
        self._store = ffi.wasmtime_store_new(engine.ptr(), None, _NO_FINALIZER)
        self._context = ffi.wasmtime_store_context(self._store)
        ffi.wasmtime_store_limiter(self._store, memory_bytes, -1, -1, -1, -1)
        _on_deadlines(self._store, should_stop, message)
        ffi.wasmtime_context_set_epoch_deadline(self._context, 1)

    def set_wasi(
        self,
        argv: Sequence[str],
        preopens: Sequence[tuple[str, str, bool]] = (),
        config: wasmtime.WasiConfig | None = None,
    ) -> None:
        """Give the guest a WASI context: ``argv``, the ``preopens`` (host directory, guest
        path, writable) and no environment; built on ``config`` (which this consumes) when
        given, for stdin and outputs set there."""
        wasi = config._consume() if config is not None else ffi.wasi_config_new()
        try:
            encoded = [arg.encode("utf-8") for arg in argv]
            if not ffi.wasi_config_set_argv(
                wasi,
                len(encoded),
                ctypes.cast((ctypes.c_char_p * len(encoded))(*encoded), _CHAR_PP),
            ):
                raise wasmtime.WasmtimeError("failed to configure argv")
            for host, guest, writable in preopens:
                if not ffi.wasi_config_preopen_dir(
                    wasi, host.encode("utf-8"), guest.encode("utf-8"), writable
                ):
                    raise wasmtime.WasmtimeError(f"failed to add preopen dir {host}")
        except BaseException:
            ffi.wasi_config_delete(wasi)
            raise
        _raise_failure(ffi.wasmtime_context_set_wasi(self._context, wasi), None)

    def instantiate(self, pre: wasmtime.InstancePre) -> Instance:
        """A new instance of ``pre``; raises what ``InstancePre.instantiate`` raises."""
        instance = ffi.wasmtime_instance_t()
        trap = ctypes.POINTER(ffi.wasm_trap_t)()
        error = ffi.wasmtime_instance_pre_instantiate(
            pre.ptr(), self._context, ctypes.byref(instance), ctypes.byref(trap)
        )
        _raise_failure(error, trap)
        return instance

    def call(self, instance: Instance, name: bytes, results: int = 0) -> Any:
        """Call the exported function ``name`` with no arguments.

        Returns its one integer result (``results=1``), None (``results=0``), or
        :data:`NOT_A_FUNCTION`. A trap raises :class:`wasmtime.Trap`; an exit
        :class:`wasmtime.ExitTrap`; any other failure :class:`wasmtime.WasmtimeError`.
        """
        item = ffi.wasmtime_extern_t()
        found = ffi.wasmtime_instance_export_get(
            self._context, ctypes.byref(instance), name, len(name), ctypes.byref(item)
        )
        if not found or item.kind != _EXTERN_FUNC:
            return NOT_A_FUNCTION
        values = (ffi.wasmtime_val_t * results)()
        trap = ctypes.POINTER(ffi.wasm_trap_t)()
        error = ffi.wasmtime_func_call(
            self._context, ctypes.byref(item.of.func), None, 0, values, results, ctypes.byref(trap)
        )
        _raise_failure(error, trap)
        if not results:
            return None
        value = values[0]
        if value.kind == _I64:
            return int(value.of.i64)
        if value.kind == _I32:
            return int(value.of.i32)
        return None

    def read_memory(self, instance: Instance, start: int, size: int) -> bytes | None:
        """``size`` bytes at ``start`` of the exported ``memory``; None if outside or absent."""
        memory = self._memory(instance)
        if memory is None:
            return None
        context = self._context
        if start < 0 or size < 0 or start + size > ffi.wasmtime_memory_data_size(context, memory):
            return None
        if not size:
            return b""
        # addressof(contents), not cast(..., c_void_p): the same address, one object fewer.
        base = ctypes.addressof(ffi.wasmtime_memory_data(context, memory).contents)
        return ctypes.string_at(base + start, size)

    def memory_size(self, instance: Instance) -> int:
        """The byte size of the exported ``memory`` (0 when there is none)."""
        memory = self._memory(instance)
        return 0 if memory is None else int(ffi.wasmtime_memory_data_size(self._context, memory))

    def close(self) -> None:
        """Free the store: its instances, memories, WASI context and pool slots (idempotent)."""
        store, self._store = self._store, None
        if store:
            ffi.wasmtime_store_delete(store)

    def _memory(self, instance: Instance) -> Any:
        item = ffi.wasmtime_extern_t()
        found = ffi.wasmtime_instance_export_get(
            self._context, ctypes.byref(instance), b"memory", 6, ctypes.byref(item)
        )
        if not found or item.kind != _EXTERN_MEMORY:
            return None
        return ctypes.byref(item.of.memory)


def _raise_failure(error: Any, trap: Any) -> None:
    """Raise the wasmtime-py exception for a failed C call (``error`` or ``trap`` set).

    When a Python host function raised, wasmtime-py kept its exception: that one is raised,
    as wasmtime-py's own calls do.
    """
    if error or trap:
        _func.maybe_raise_last_exn()
    if error:
        raise wasmtime.WasmtimeError._from_ptr(error)
    if trap:
        raise wasmtime.Trap._from_ptr(trap)


def set_stdin_bytes(wasi: wasmtime.WasiConfig, data: bytes) -> None:
    """Make ``data`` the guest's whole stdin (the config keeps its own copy)."""
    vec = ffi.wasm_byte_vec_t()
    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    ffi.wasm_byte_vec_new(ctypes.byref(vec), len(data), buffer)
    # The config takes ownership of the vector's bytes.
    ffi.wasi_config_set_stdin_bytes(wasi.ptr(), ctypes.byref(vec))


DECOMMIT_BATCH = 32
"""Freed instance slots whose memory is returned to the kernel in one go."""


def use_pooling_allocator(
    config: wasmtime.Config,
    *,
    instances: int,
    max_memory_bytes: int,
    per_component: tuple[int, int, int] | None = None,
) -> None:
    """Have engines made from ``config`` take instances from preallocated slots.

    ``instances`` instances (each with one memory, one table and one stack) can be alive at
    once; each memory slot reserves address space for ``max_memory_bytes``, so no instance
    can grow a memory past it. With ``per_component`` -- the core instances, memories and
    tables one component instance may hold -- the slots are for ``instances`` component
    instances of at most that shape.
    """
    core, memories, tables = per_component or (1, 1, 1)
    pool = ffi.wasmtime_pooling_allocation_config_new()
    try:
        ffi.wasmtime_pooling_allocation_config_total_core_instances_set(pool, instances * core)
        ffi.wasmtime_pooling_allocation_config_total_memories_set(pool, instances * memories)
        ffi.wasmtime_pooling_allocation_config_total_tables_set(pool, instances * tables)
        ffi.wasmtime_pooling_allocation_config_total_stacks_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_max_memory_size_set(pool, max_memory_bytes)
        if per_component is not None:
            ffi.wasmtime_pooling_allocation_config_total_component_instances_set(pool, instances)
            ffi.wasmtime_pooling_allocation_config_max_core_instances_per_component_set(pool, core)
            ffi.wasmtime_pooling_allocation_config_max_memories_per_component_set(pool, memories)
            ffi.wasmtime_pooling_allocation_config_max_tables_per_component_set(pool, tables)
        # Freed slots return their memory to the kernel DECOMMIT_BATCH at a time: one flush
        # of the TLBs on every CPU instead of one per guest (~6% off a small call here).
        batch = min(DECOMMIT_BATCH, instances)
        ffi.wasmtime_pooling_allocation_config_decommit_batch_size_set(pool, batch)
        ffi.wasmtime_pooling_allocation_strategy_set(config.ptr(), pool)
    finally:
        ffi.wasmtime_pooling_allocation_config_delete(pool)


def set_async_stack_size(config: wasmtime.Config, size: int) -> None:
    """Set the stack size wasmtime checks ``max_wasm_stack`` against (engine creation
    *aborts the process* when ``max_wasm_stack`` exceeds it: callers check first)."""
    ffi.wasmtime_config_async_stack_size_set(config.ptr(), size)


def epoch_ticker(engine: wasmtime.Engine) -> Callable[[], None]:
    """A call that moves ``engine``'s epoch one tick on, holding the GIL throughout.

    ``Engine.increment_epoch`` calls through wasmtime-py's ``CDLL``, which lets go of the GIL
    for the C call and takes it back after: a thread that ticks that way takes the GIL twice
    a tick, and each time the thread running Python (which lets go of it at every C call of
    a guest run) has to wait for it back. This calls the same C function through a
    ``PyDLL`` handle of the same library, which keeps the GIL for the atomic add it is: the
    ticker takes the GIL once a tick, when it wakes. Valid while the engine is.
    """
    declared = ffi.wasmtime_engine_increment_epoch  # the C function, as wasmtime-py calls it
    increment = getattr(_GIL_KEEPING, declared.__name__)
    increment.argtypes = (ctypes.POINTER(ffi.wasm_engine_t),)
    increment.restype = None
    return functools.partial(increment, engine.ptr())


_GIL_KEEPING = ctypes.PyDLL(ffi.dll._name)
"""wasmtime's C library once more, with calls that keep the GIL (see :func:`epoch_ticker`)."""


def stop_at_deadlines(store: wasmtime.Store, should_stop: StopCheck, message: bytes) -> None:
    """Give a :class:`wasmtime.Store` (a component's) what :class:`GuestStore` has: at each
    epoch tick ``should_stop()`` is asked, and a stopped guest unwinds with ``message``.
    The first deadline is one tick away."""
    _on_deadlines(store.ptr(), should_stop, message)
    store.set_epoch_deadline(1)


# The deadline callback is one C function for every store; the store's ``data`` pointer is
# a key into this table, and the store's finalizer removes the key when the store is freed.
_checks: dict[int, tuple[StopCheck, bytes]] = {}
_keys = itertools.count(1)

_WASMTIME_UPDATE_DEADLINE_CONTINUE = 0


def _on_deadline(context: Any, data: int | None, delta: Any, kind: Any) -> int:
    check = _checks.get(data or 0)
    if check is None or check[0]():
        error = ffi.wasmtime_error_new(check[1] if check is not None else b"guest stopped")
        return ctypes.cast(error, ctypes.c_void_p).value or 0
    delta[0] = 1
    kind[0] = _WASMTIME_UPDATE_DEADLINE_CONTINUE
    return 0


def _on_finalize(data: int | None) -> None:
    _checks.pop(data or 0, None)


_DEADLINE_CALLBACK_TYPE = ctypes.CFUNCTYPE(
    ctypes.c_size_t,
    ctypes.POINTER(ffi.wasmtime_context_t),
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_uint64),
    ctypes.POINTER(ffi.wasmtime_update_deadline_kind_t),
)
_FINALIZER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DEADLINE_CALLBACK = _DEADLINE_CALLBACK_TYPE(_on_deadline)
_FINALIZER = _FINALIZER_TYPE(_on_finalize)


def _on_deadlines(store: Any, should_stop: StopCheck, message: bytes) -> None:
    """At each epoch deadline of ``store``, stop its guest if ``should_stop()`` says so.

    A stopped guest unwinds with a :class:`wasmtime.WasmtimeError` whose text holds
    ``message``; otherwise the deadline moves one epoch tick on.
    """
    key = next(_keys)
    _checks[key] = (should_stop, message)
    ffi.wasmtime_store_epoch_deadline_callback(store, _DEADLINE_CALLBACK, key, _FINALIZER)


def live_output_callbacks() -> int:
    """How many guest stdout/stderr callbacks wasmtime still holds (0 if unknown).

    wasmtime's own threads write, and finally drop, a guest's custom outputs through Python
    callbacks; each live one holds a handle in wasmtime-py's table of custom outputs.
    """
    outputs = getattr(_wasi, "CUSTOM_OUTPUTS", None)
    handles = getattr(outputs, "handles", None)
    return len(handles) if handles is not None else 0


# Host functions without wasmtime-py's per-call wrappers. ``Linker.define_func`` hands Python
# a ``Caller`` and one ``Val`` object per argument and result (~20 µs a call here), and the
# caller's memory costs another ``Memory`` object; a function defined by
# :func:`define_raw_func` gets the raw values and its caller's memory as a memory view.

RawHostFunction: TypeAlias = Callable[..., int]
"""Called with the caller's exported ``memory`` as a writable memory view (None when it
exports none) and then the guest's arguments as ints; returns the ``i32`` result."""

_RAW_KINDS = {"i32": ("i12x", wasmtime.ValType.i32()), "i64": ("q8x", wasmtime.ValType.i64())}
_RAW_SLOT = 16
"""Bytes per value in a raw call (``sizeof(wasmtime_val_raw_t)``: it holds a ``v128``)."""
_raw_functions: dict[int, tuple[RawHostFunction, Callable[[memoryview], tuple[int, ...]]]] = {}
_RESULT = struct.Struct("<i")
_raw_keys = itertools.count(1)
_memory_view = ctypes.pythonapi.PyMemoryView_FromMemory
_memory_view.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
_memory_view.restype = ctypes.py_object
_PYBUF_WRITE = 0x200
RAW_FAILURE = -7
"""The result a raw host function's caller gets when calling it failed in the host."""


def _caller_memory(caller: Any) -> memoryview | None:
    """The caller's exported ``memory``, valid until the host function returns."""
    item = ffi.wasmtime_extern_t()
    if not ffi.wasmtime_caller_export_get(caller, b"memory", 6, ctypes.byref(item)):
        return None
    if item.kind != _EXTERN_MEMORY:
        return None
    context = ffi.wasmtime_caller_context(caller)
    memory = ctypes.byref(item.of.memory)
    size = ffi.wasmtime_memory_data_size(context, memory)
    if not size:
        return memoryview(bytearray())
    base = ctypes.addressof(ffi.wasmtime_memory_data(context, memory).contents)
    view: memoryview = _memory_view(base, size, _PYBUF_WRITE)
    return view


def _raw_trampoline(key: int | None, caller: Any, values: Any, count: int) -> int:
    # ``values`` holds max(arguments, results) slots: the arguments in, the result out.
    slots: memoryview = _memory_view(
        ctypes.addressof(values.contents), _RAW_SLOT * count, _PYBUF_WRITE
    )
    try:
        func, unpack = _raw_functions[key or 0]
        _RESULT.pack_into(slots, 0, func(_caller_memory(caller), *unpack(slots)))
    except BaseException:  # nothing may unwind into wasmtime's C frames
        _RESULT.pack_into(slots, 0, RAW_FAILURE)
    return 0


def _raw_finalize(key: int | None) -> None:
    _raw_functions.pop(key or 0, None)


_RAW_CALLBACK = ffi.wasmtime_func_unchecked_callback_t(_raw_trampoline)
_RAW_FINALIZER = _FINALIZER_TYPE(_raw_finalize)


def define_raw_func(
    linker: wasmtime.Linker, module: str, name: str, params: list[str], func: RawHostFunction
) -> None:
    """Define ``module.name`` in ``linker``: ``params`` (``"i32"``/``"i64"``) to one ``i32``.

    ``func`` gets the caller's memory view and the arguments (see :data:`RawHostFunction`)
    and must not raise (anything it raises becomes the result :data:`RAW_FAILURE`); it must
    not keep the view past its return.
    """
    unpack = struct.Struct("<" + "".join(_RAW_KINDS[p][0] for p in params)).unpack_from
    functype = wasmtime.FuncType([_RAW_KINDS[p][1] for p in params], [wasmtime.ValType.i32()])
    key = next(_raw_keys)
    _raw_functions[key] = (func, unpack)
    module_bytes, name_bytes = module.encode(), name.encode()
    error = ffi.wasmtime_linker_define_func_unchecked(
        linker.ptr(),
        module_bytes,
        len(module_bytes),
        name_bytes,
        len(name_bytes),
        functype.ptr(),
        _RAW_CALLBACK,
        key,
        _RAW_FINALIZER,
    )
    if error:
        _raw_functions.pop(key, None)
        raise wasmtime.WasmtimeError._from_ptr(error)
