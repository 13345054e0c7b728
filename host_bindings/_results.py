"""The ``result`` import shared by every binding that answers with JSON."""

from __future__ import annotations

import wasmtime

from ._abi import I32, PendingResults, call_state, guarded
from ._memory import write_bytes


def define_result(linker: wasmtime.Linker, module: str, pending: PendingResults) -> None:
    """Define ``module.result(buf_ptr, buf_len) -> i32``, copying out the pending result."""

    @guarded
    def result(caller: wasmtime.Caller, ptr: int, capacity: int) -> int:
        state = call_state()
        written = write_bytes(caller, ptr, capacity, pending.peek(state))
        pending.drop(state)
        return written

    linker.define_func(module, "result", wasmtime.FuncType([I32, I32], [I32]), result, True)
