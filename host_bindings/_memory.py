"""Bounds-checked access to a guest's linear memory from inside a host function.

Guest pointers and lengths arrive as wasm ``i32`` values, which wasmtime hands to Python
as *signed* integers; a pointer is really unsigned, so it is reinterpreted as ``u32``,
while a negative length is simply invalid. Every access is checked against the memory's
current size *before* it happens (memory can grow between calls), and a failed check
raises :class:`~toolcage.host_bindings._abi.GuestError` with ``FAULT`` -- the guest gets
an error code, the host never reads or writes outside the guest's memory.
"""

from __future__ import annotations

import wasmtime

from ._abi import MAX_REQUEST_BYTES, AbiError, GuestError


def _memory(caller: wasmtime.Caller) -> wasmtime.Memory:
    memory = caller.get("memory")
    if not isinstance(memory, wasmtime.Memory):
        raise GuestError(AbiError.FAULT)
    return memory


def _span(caller: wasmtime.Caller, memory: wasmtime.Memory, ptr: int, length: int) -> int:
    if length < 0:
        raise GuestError(AbiError.FAULT)
    start = ptr & 0xFFFFFFFF
    if start + length > memory.data_len(caller):
        raise GuestError(AbiError.FAULT)
    return start


def read_bytes(
    caller: wasmtime.Caller, ptr: int, length: int, limit: int = MAX_REQUEST_BYTES
) -> bytes:
    """``length`` bytes at guest address ``ptr``."""
    if length > limit:
        raise GuestError(AbiError.TOO_BIG)
    memory = _memory(caller)
    start = _span(caller, memory, ptr, length)
    return bytes(memory.read(caller, start, start + length))


def write_bytes(caller: wasmtime.Caller, ptr: int, capacity: int, data: bytes) -> int:
    """Copy ``data`` to guest address ``ptr`` (a buffer of ``capacity`` bytes)."""
    memory = _memory(caller)
    start = _span(caller, memory, ptr, capacity)
    if len(data) > capacity:
        raise GuestError(AbiError.SHORT_BUF)
    memory.write(caller, data, start)
    return len(data)
