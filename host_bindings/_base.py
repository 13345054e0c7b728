"""What a host binding is, and the per-call state it reaches.

A host binding lends guests one capability (HTTP, the clock, progress, logging) as a set
of wasm imports under one module name. The runner links into a tool's linker only the
bindings its policy grants, so an ungranted capability is structurally absent: a guest
that imports it fails to instantiate.

Host functions run synchronously, in the worker thread that runs the guest. Whatever
belongs to the current call (its deadline, where progress goes) is in :data:`current_call`,
set by the runner around each guest run.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import wasmtime


@dataclass(frozen=True, slots=True)
class CallState:
    """The running call, as host functions see it."""

    tool_name: str
    """The tool whose guest is running."""
    deadline: float
    """``time.monotonic()`` value by which the call must be over; blocking work must not pass it."""
    progress: Callable[[str, float | None], None]
    """Report progress (message, fraction); safe to call from the guest's thread."""
    log: Callable[[str, str], None]
    """Log a line (level, message) on the host's logger for this call."""


current_call: contextvars.ContextVar[CallState] = contextvars.ContextVar("toolcage_current_call")


class HostBinding(Protocol):
    """A capability that can be linked into a guest's imports."""

    @property
    def name(self) -> str:
        """Capability name, as policies grant it (``"http"``, ``"clock"``, ...)."""
        ...

    def define(self, linker: wasmtime.Linker) -> None:
        """Define this capability's imports in ``linker``."""
        ...
