"""The host ABI, version 1: how guests call host capabilities.

Each capability is one wasm import module, versioned in its name, so a v2 can live next
to v1 and a guest built against v1 keeps linking::

    module                  function                                     returns
    toolcage_http_v1        request(req_ptr i32, req_len i32)          -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_clock_v1       now(req_ptr i32, req_len i32)              -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_search_v1      query(req_ptr i32, req_len i32)            -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_memory_v1      save|update|delete|search(req_ptr, req_len) -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_scratchpad_v1  read|write|clear(req_ptr, req_len)         -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_vault_v1       copy(req_ptr i32, req_len i32)             -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_scheduler_v1   create|search|edit|delete|runs|run_output(req_ptr, req_len)
                                                                       -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_channel_v1     send(meta_ptr, meta_len, data_ptr, data_len) -> i32 result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_relay_v1       call(req_ptr i32, req_len i32)             -> i32  result length
                            result(buf_ptr i32, buf_len i32)           -> i32  bytes copied
    toolcage_progress_v1    report(msg_ptr i32, msg_len i32, frac f64) -> i32  0
    toolcage_log_v1         write(level i32, msg_ptr i32, msg_len i32) -> i32  0
    toolcage_fs_v1          read, stat, opendir, opendir_at, list, read_many, close:
                            binary, not JSON (see :mod:`._fs`)

Requests and results are UTF-8 JSON in the guest's exported ``memory`` (the file that
``channel.send`` carries is raw bytes: see :mod:`._media`). A call that produces a result
keeps it host-side as the *pending result* of the current call; the guest allocates the
returned length and fetches it with ``result``. Results are objects with ``"ok": true``
and data, or ``"ok": false`` with ``error_type`` (the envelope's
vocabulary: ``permission_denied``, ``timeout``, ``validation_error``, ``execution_error``)
and ``message``.

A negative return is an ABI error, never a policy or network outcome; the host is never
harmed by a bad call, the guest just gets one of these codes:

    -1 FAULT       pointer/length outside guest memory, or no exported memory
    -2 INVALID     request is not UTF-8 JSON of the documented shape
    -3 TOO_BIG     request larger than the ABI accepts (``MAX_REQUEST_BYTES``)
    -4 NO_RESULT   ``result`` with nothing pending
    -5 SHORT_BUF   ``result`` buffer smaller than the pending result (it stays pending)
    -6 NO_CALL     called outside a tool call
    -7 INTERNAL    the host failed unexpectedly (logged)

``toolcage_relay_v1.call`` is the one call a relay tool's declaration names, of the
binding the tool was granted (see :mod:`._relay`).

Log levels: 0 debug, 1 info, 2 warning, 3 error. A progress fraction outside [0, 1]
(conventionally -1) means "no fraction".
"""

from __future__ import annotations

import enum
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import wasmtime

from ._base import CallState, current_call

ABI_VERSION = 1
MAX_REQUEST_BYTES = 8 * 1024 * 1024

_log = logging.getLogger("toolcage.host_bindings")


class AbiError(enum.IntEnum):
    FAULT = -1
    INVALID = -2
    TOO_BIG = -3
    NO_RESULT = -4
    SHORT_BUF = -5
    NO_CALL = -6
    INTERNAL = -7


class GuestError(Exception):
    """Ends a host function early with an ABI error code for the guest."""

    def __init__(self, code: AbiError) -> None:
        super().__init__(code.name)
        self.code = code


def module_name(capability: str) -> str:
    """The import module of ``capability`` in this ABI version."""
    return f"toolcage_{capability}_v{ABI_VERSION}"


def guarded(func: Callable[..., int]) -> Callable[..., int]:
    """Wrap a host function: any exception becomes an error code, never a trap or a crash."""

    def run(*args: Any) -> int:
        try:
            return func(*args)
        except GuestError as exc:
            return int(exc.code)
        except Exception:
            _log.exception(
                "host function %s failed",
                func.__name__,
                extra={"event": "binding.crash", "function": func.__name__},
            )
            return int(AbiError.INTERNAL)

    run.__name__ = func.__name__
    return run


def call_state() -> CallState:
    """The current call, or the NO_CALL error for the guest."""
    try:
        return current_call.get()
    except LookupError:
        raise GuestError(AbiError.NO_CALL) from None


def parse_request(raw: bytes) -> dict[str, Any]:
    """A JSON object request, or the INVALID error."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise GuestError(AbiError.INVALID) from None
    if not isinstance(value, dict):
        raise GuestError(AbiError.INVALID)
    return value


class PendingResults:
    """Results waiting for the guest's ``result`` call, one per running call.

    Keyed by the call's :class:`CallState` object itself, so a result can never be read by
    another call that happens to reuse the same worker thread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_thread: dict[int, tuple[CallState, bytes]] = {}

    def put(self, state: CallState, result: dict[str, Any]) -> int:
        data = json.dumps(result, ensure_ascii=False).encode("utf-8")
        with self._lock:
            self._by_thread[threading.get_ident()] = (state, data)
        return len(data)

    def peek(self, state: CallState) -> bytes:
        """The pending result of ``state``'s call (NO_RESULT if none)."""
        with self._lock:
            entry = self._by_thread.get(threading.get_ident())
        if entry is None or entry[0] is not state:
            raise GuestError(AbiError.NO_RESULT)
        return entry[1]

    def drop(self, state: CallState) -> None:
        """Forget the pending result once the guest has it."""
        with self._lock:
            entry = self._by_thread.get(threading.get_ident())
            if entry is not None and entry[0] is state:
                del self._by_thread[threading.get_ident()]


def ok(**data: Any) -> dict[str, Any]:
    return {"ok": True, **data}


def failed(error_type: str, message: str, field: str | None = None) -> dict[str, Any]:
    """An error answer; ``field`` names the argument it is about (the envelope's ``field``,
    which the SDK's ``tch_result_error`` passes on)."""
    answer = {"ok": False, "error_type": error_type, "message": message}
    return answer if field is None else {**answer, "field": field}


I32 = wasmtime.ValType.i32()
F64 = wasmtime.ValType.f64()
