"""Request/result imports shared by every binding that answers with JSON.

The guest sends a JSON request (``NAME(req_ptr, req_len) -> i32``); the host answers with the
length of its JSON result, which the guest copies out with ``result(buf_ptr, buf_len)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import wasmtime

from ._abi import I32, PendingResults, call_state, guarded, parse_request
from ._base import CallState
from ._memory import read_bytes, write_bytes

JsonHandler = Callable[[CallState, dict[str, Any]], dict[str, Any]]
"""Answers one decoded request of a call with a result object."""


def define_json_call(linker: wasmtime.Linker, module: str, name: str, handler: JsonHandler) -> None:
    """Define ``module.NAME`` (an empty request is ``{}``) and ``module.result``."""
    pending = PendingResults()

    @guarded
    def call(caller: wasmtime.Caller, ptr: int, length: int) -> int:
        state = call_state()
        request = parse_request(read_bytes(caller, ptr, length)) if length else {}
        return pending.put(state, handler(state, request))

    @guarded
    def result(caller: wasmtime.Caller, ptr: int, capacity: int) -> int:
        state = call_state()
        written = write_bytes(caller, ptr, capacity, pending.peek(state))
        pending.drop(state)
        return written

    signature = wasmtime.FuncType([I32, I32], [I32])
    linker.define_func(module, name, signature, call, True)
    linker.define_func(module, "result", signature, result, True)
