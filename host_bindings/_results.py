"""Request/result imports shared by every binding that answers with JSON.

The guest sends a JSON request (``NAME(req_ptr, req_len) -> i32``); the host answers with the
length of its JSON result, which the guest copies out with ``result(buf_ptr, buf_len)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import wasmtime

from ._abi import I32, PendingResults, call_state, guarded, parse_request
from ._base import CallState
from ._memory import read_bytes, write_bytes

JsonHandler = Callable[[CallState, dict[str, Any]], dict[str, Any]]
"""Answers one decoded request of a call with a result object."""


def define_json_call(linker: wasmtime.Linker, module: str, name: str, handler: JsonHandler) -> None:
    """Define ``module.NAME`` (an empty request is ``{}``) and ``module.result``."""
    define_json_calls(linker, module, {name: handler})


def define_json_calls(
    linker: wasmtime.Linker, module: str, handlers: Mapping[str, JsonHandler]
) -> None:
    """Define ``module.NAME`` for each of ``handlers`` and the one ``module.result`` they
    share (a call's pending result is the one of its latest request)."""
    pending = PendingResults()

    def answering(handler: JsonHandler) -> Callable[[wasmtime.Caller, int, int], int]:
        def call(caller: wasmtime.Caller, ptr: int, length: int) -> int:
            state = call_state()
            request = parse_request(read_bytes(caller, ptr, length)) if length else {}
            return pending.put(state, handler(state, request))

        return call

    signature = wasmtime.FuncType([I32, I32], [I32])
    for name, handler in handlers.items():
        call = answering(handler)
        call.__name__ = name
        linker.define_func(module, name, signature, guarded(call), True)
    define_result(linker, module, pending)


def define_result(linker: wasmtime.Linker, module: str, pending: PendingResults) -> None:
    """Define ``module.result``: copy out the call's pending result of ``pending``."""

    @guarded
    def result(caller: wasmtime.Caller, ptr: int, capacity: int) -> int:
        state = call_state()
        written = write_bytes(caller, ptr, capacity, pending.peek(state))
        pending.drop(state)
        return written

    linker.define_func(module, "result", wasmtime.FuncType([I32, I32], [I32]), result, True)
