"""The ``progress`` and ``log`` bindings: a guest tells the host how it is doing.

``toolcage_progress_v1.report(msg, len, fraction)`` goes to the call's progress callback,
which the runtime turns into ``tool_execution_update`` events. ``toolcage_log_v1.write(level,
msg, len)`` goes to the host's logger for the call. Messages are capped (longer ones are
refused with TOO_BIG) and decoded leniently: a log line is never worth failing a call.
"""

from __future__ import annotations

import math

import wasmtime

from ._abi import F64, I32, call_state, guarded, module_name
from ._memory import read_bytes

MAX_MESSAGE_BYTES = 4096
LEVELS = ("debug", "info", "warning", "error")


class ProgressBinding:
    """Capability ``progress``."""

    name = "progress"

    def define(self, linker: wasmtime.Linker) -> None:
        @guarded
        def report(caller: wasmtime.Caller, ptr: int, length: int, fraction: float) -> int:
            state = call_state()
            message = read_bytes(caller, ptr, length, MAX_MESSAGE_BYTES)
            known = 0.0 <= fraction <= 1.0 and not math.isnan(fraction)
            state.progress(message.decode("utf-8", errors="replace"), fraction if known else None)
            return 0

        linker.define_func(
            module_name(self.name),
            "report",
            wasmtime.FuncType([I32, I32, F64], [I32]),
            report,
            True,
        )


class LogBinding:
    """Capability ``log``."""

    name = "log"

    def define(self, linker: wasmtime.Linker) -> None:
        @guarded
        def write(caller: wasmtime.Caller, level: int, ptr: int, length: int) -> int:
            state = call_state()
            message = read_bytes(caller, ptr, length, MAX_MESSAGE_BYTES)
            name = LEVELS[level] if 0 <= level < len(LEVELS) else "info"
            state.log(name, message.decode("utf-8", errors="replace"))
            return 0

        linker.define_func(
            module_name(self.name), "write", wasmtime.FuncType([I32, I32, I32], [I32]), write, True
        )
