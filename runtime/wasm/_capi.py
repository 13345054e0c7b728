"""Everything toolcage takes from wasmtime-py beyond its public API, in one module.

wasmtime-py wraps wasmtime's C API but leaves out a few parts toolcage needs: looking up one
export by name (``Instance.exports()`` wraps every export of the module), stdin from bytes
(only ``stdin_file`` is exposed), the pooling allocator, an epoch deadline callback (only a
fixed deadline is exposed) and a way to tell when wasmtime has dropped a guest's output
callbacks. This module reaches them through wasmtime-py's private modules (``_ffi``,
``_extern``, ``_wasi``), private attributes (``Store._context()``, ``Instance._instance``) and
the C handles behind ``ptr()``. No other toolcage module imports ``wasmtime._*`` or calls the
C API.

These internals can change in any wasmtime release, so the module states the version it was
written against (:data:`WASMTIME_VERSION`, the pin in ``pyproject.toml``) and
``tests/runtime/wasm/test_capi.py`` checks the installed version, the shape of every symbol
used here (the C signatures wasmtime-py declares for them), that no other module reaches
past the public API, and what each function here does with real wasmtime objects.

:func:`export` and :func:`set_stdin_bytes` run on every guest call; they build nothing
beyond the arguments of the C calls they make.
"""

from __future__ import annotations

import ctypes
import itertools
from collections.abc import Callable
from typing import Any, TypeAlias

import wasmtime
from wasmtime import _ffi as ffi
from wasmtime import _wasi
from wasmtime._extern import wrap_extern

WASMTIME_VERSION = "50.0.1"
"""The wasmtime-py release this module was written against (the pin in ``pyproject.toml``)."""

Extern: TypeAlias = (
    wasmtime.Func
    | wasmtime.Memory
    | wasmtime.Table
    | wasmtime.Global
    | wasmtime.SharedMemory
    | wasmtime.Tag
)
"""What an instance can export."""

StopCheck: TypeAlias = Callable[[], bool]
"""Asked at an epoch deadline whether the guest should stop now."""


def export(store: wasmtime.Store, instance: wasmtime.Instance, name: bytes) -> Extern | None:
    """The export ``name`` of ``instance``, or None if it has none by that name."""
    item = ffi.wasmtime_extern_t()
    found = ffi.wasmtime_instance_export_get(
        store._context(), ctypes.byref(instance._instance), name, len(name), ctypes.byref(item)
    )
    return wrap_extern(item) if found else None


def set_stdin_bytes(wasi: wasmtime.WasiConfig, data: bytes) -> None:
    """Make ``data`` the guest's whole stdin (the config keeps its own copy)."""
    vec = ffi.wasm_byte_vec_t()
    buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    ffi.wasm_byte_vec_new(ctypes.byref(vec), len(data), buffer)
    # The config takes ownership of the vector's bytes.
    ffi.wasi_config_set_stdin_bytes(wasi.ptr(), ctypes.byref(vec))


def use_pooling_allocator(
    config: wasmtime.Config, *, instances: int, max_memory_bytes: int
) -> None:
    """Have engines made from ``config`` take instances from preallocated slots.

    ``instances`` instances (each with one memory, one table and one stack) can be alive at
    once; each memory slot reserves address space for ``max_memory_bytes``, so no instance
    can grow a memory past it.
    """
    pool = ffi.wasmtime_pooling_allocation_config_new()
    try:
        ffi.wasmtime_pooling_allocation_config_total_core_instances_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_total_memories_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_total_tables_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_total_stacks_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_max_memory_size_set(pool, max_memory_bytes)
        ffi.wasmtime_pooling_allocation_strategy_set(config.ptr(), pool)
    finally:
        ffi.wasmtime_pooling_allocation_config_delete(pool)


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


def epoch_deadline_callback(store: wasmtime.Store, should_stop: StopCheck, message: bytes) -> None:
    """At each epoch deadline of ``store``, stop its guest if ``should_stop()`` says so.

    A stopped guest unwinds with a :class:`wasmtime.WasmtimeError` whose text holds
    ``message``; otherwise the deadline moves one epoch tick on. The first deadline is
    whatever ``store.set_epoch_deadline`` sets.
    """
    key = next(_keys)
    _checks[key] = (should_stop, message)
    ffi.wasmtime_store_epoch_deadline_callback(store.ptr(), _DEADLINE_CALLBACK, key, _FINALIZER)


def live_output_callbacks() -> int:
    """How many guest stdout/stderr callbacks wasmtime still holds (0 if unknown).

    wasmtime's own threads write, and finally drop, a guest's custom outputs through Python
    callbacks; each live one holds a handle in wasmtime-py's table of custom outputs.
    """
    outputs = getattr(_wasi, "CUSTOM_OUTPUTS", None)
    handles = getattr(outputs, "handles", None)
    return len(handles) if handles is not None else 0
