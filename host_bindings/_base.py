"""What a host binding is, and the per-call state it reaches.

A host binding lends guests one capability (HTTP, the clock, progress, logging) as a set
of wasm imports under one module name. The runner links into a tool's linker only the
bindings its policy grants, so an ungranted capability is structurally absent: a guest
that imports it fails to instantiate.

Host functions run synchronously, in the worker thread that runs the guest. Whatever
belongs to the current call (its deadline, where progress goes, its mounts) is in
:data:`current_call`, set by the runner around each guest run. What host functions open
for a call (descriptors) is kept in its :class:`CallResources` and closed by
:meth:`CallState.release` once the guest has ended.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import wasmtime
from toolcage.policies import GrantedMount, Principal


class Closeable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=Closeable)


class CallResources:
    """What host functions opened for one call, by key; closed together at its end.

    Only the guest's own thread touches them (a guest calls the host from one thread),
    so there is no lock.
    """

    def __init__(self) -> None:
        self._items: dict[str, Closeable] = {}

    def get(self, key: str, make: Callable[[], _C]) -> _C:
        """The resource under ``key``, made by ``make()`` on first use."""
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = make()
        return item  # type: ignore[return-value]  # one key, one maker

    def close(self) -> None:
        """Close every resource (idempotent)."""
        items, self._items = list(self._items.values()), {}
        for item in items:
            item.close()


class Landing:
    """Where a host function reports that the call's effect has landed (a write committed).

    The runner attaches its stop switch (:meth:`attach`): a guest whose effect landed is
    given a short grace past its deadline to return and report it, so that a call which
    reports ``timeout`` has had no effect. Only the guest's own thread reports."""

    def __init__(self) -> None:
        self._hook: Callable[[], None] | None = None

    def attach(self, hook: Callable[[], None]) -> None:
        """Call ``hook`` whenever the call's effect lands."""
        self._hook = hook

    def landed(self) -> None:
        """The call's effect has landed: let its guest report it."""
        if self._hook is not None:
            self._hook()


_NOBODY = Principal()
"""The default principal of a call state built without one (tests, benchmarks)."""


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
    mounts: tuple[GrantedMount, ...] = ()
    """The mounts granted to this call (for its tool and tier): all the ``fs`` binding reaches."""
    resources: CallResources = field(default_factory=CallResources)
    """What host functions opened for this call."""
    principal: Principal = _NOBODY
    """Who the call belongs to: the only user whose state the state bindings reach, the
    only session whose scratchpad they reach, the agent whose vault grants apply."""
    landing: Landing = field(default_factory=Landing)
    """Report an effect that landed (see :class:`Landing`)."""
    reply_bytes: int = 16 << 10
    """UTF-8 bytes of the tool's result text that reach the model uncut (its
    ``truncate_bytes``): a binding whose answer could be longer fits it to this, with a
    hint to ask for the rest, rather than have the pipeline cut its JSON."""
    decide: Callable[[str, bool, str], None] | None = None
    """Report a policy's verdict (policy, allowed, reason) to whatever observes the call
    (the audit log, telemetry); ``None`` when nothing does."""

    def release(self) -> None:
        """Close what host functions opened for the call; only once its guest has ended."""
        self.resources.close()


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
