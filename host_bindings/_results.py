"""Request/result imports shared by every binding that answers with JSON.

The guest sends a JSON request (``NAME(req_ptr, req_len) -> i32``); the host answers with the
length of its JSON result, which the guest copies out with ``result(buf_ptr, buf_len)``.

A binding whose calls are whole tools (the state and schedule tools) also says how its
answer is shown (:func:`presented`): the tool's ``details``, ``display`` line and
``artifacts`` beside its ``text``. The relay guest (:mod:`._relay`) copies them into its
result document; a guest that calls the named import reads the ``text`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import wasmtime

from ._abi import I32, PendingResults, call_state, guarded, ok, parse_request
from ._base import CallState
from ._memory import read_bytes, write_bytes

JsonHandler = Callable[[CallState, dict[str, Any]], dict[str, Any]]
"""Answers one decoded request of a call with a result object."""


def define_json_call(linker: wasmtime.Linker, module: str, name: str, handler: JsonHandler) -> None:
    """Define ``module.NAME`` (an empty request is ``{}``) and ``module.result``."""
    define_json_calls(linker, module, {name: handler})


def define_json_calls(
    linker: wasmtime.Linker,
    module: str,
    handlers: Mapping[str, JsonHandler],
    pending: PendingResults | None = None,
) -> None:
    """Define ``module.NAME`` for each of ``handlers`` and the one ``module.result`` they
    share (a call's pending result is the one of its latest request); a binding that also
    defines calls of its own passes the ``pending`` results they share."""
    if pending is None:
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


def presented(
    text: str,
    details: Mapping[str, Any],
    display: str | None,
    artifacts: Sequence[tuple[str, str, str]] = (),
) -> dict[str, Any]:
    """A successful answer that is a tool's whole result: its ``text``, its ``details``
    (left out when empty), its ``display`` line and its ``artifacts`` as ``(kind, ref,
    action)`` (``ref`` raw: the guest shows it escaped, as every tool's refs are)."""
    answer = ok(text=text)
    if details:
        answer["details"] = dict(details)
    if display is not None:
        answer["display"] = display
    if artifacts:
        answer["artifacts"] = [{"kind": k, "ref": r, "action": a} for k, r, a in artifacts]
    return answer


def define_result(linker: wasmtime.Linker, module: str, pending: PendingResults) -> None:
    """Define ``module.result``: copy out the call's pending result of ``pending``."""

    @guarded
    def result(caller: wasmtime.Caller, ptr: int, capacity: int) -> int:
        state = call_state()
        written = write_bytes(caller, ptr, capacity, pending.peek(state))
        pending.drop(state)
        return written

    linker.define_func(module, "result", wasmtime.FuncType([I32, I32], [I32]), result, True)
