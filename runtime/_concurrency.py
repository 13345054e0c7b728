"""The limits on concurrent calls that a tool's concurrency mode sets, shared by the runtime.

A tool's mode (see :mod:`toolcage.policies._concurrency`) comes from, most specific first:
the operator's ``[tools.NAME] concurrency``, the tool's own ``concurrency`` attribute
(``@tool(concurrency=...)``), then a default -- ``exclusive_by_type(file)`` keyed by its path
arguments for a tool that writes or deletes through one (``file_write``, ``file_edit``,
``file_delete``, ...), ``parallel`` for any other ``read_only`` tool, ``serial`` for the rest.

The pipeline resolves each tool's :class:`ToolGate` once and runs a call of a ``limited``
or ``exclusive_by_type`` tool through it: the call waits for its permit (or for every
resource it names, taken in sorted order so two calls never wait on each other) inside its
deadline, then runs, and gives the permit back when it ends -- on success, failure, timeout
or cancellation alike, since the release sits in ``finally`` in the call's own task. A call
cancelled while waiting takes nothing. (A synchronous tool's thread, which Python cannot
stop, runs on without the permit once its call has timed out; a guest is stopped before its
call ends.) ``parallel`` and ``serial`` tools have no gate, so they pay nothing here.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from toolcage.policies import Concurrency, ConcurrencyKind, ConfigError, ToolLimitsTable

from ._errors import UsageError
from ._tool import SafetyTier, Tool

T = TypeVar("T")

_CHANGES_PATH = frozenset({"write", "delete"})


def declared_concurrency(tool: Tool) -> Concurrency:
    """The mode ``tool`` declares, or its default (see the module docstring)."""
    declared = getattr(tool, "concurrency", None)
    if isinstance(declared, Concurrency):
        return declared
    paths: Mapping[str, str] = getattr(tool, "path_arguments", None) or {}
    changed = [name for name, need in paths.items() if need in _CHANGES_PATH]
    if changed:
        return Concurrency.exclusive_by_type("file", *changed)
    if tool.safety_tier is SafetyTier.READ_ONLY:
        return Concurrency.parallel()
    return Concurrency.serial()


def runs_beside_siblings(mode: Concurrency, tier: SafetyTier) -> bool:
    """Whether a call may run concurrently with its neighbours in one model turn."""
    if mode.kind is ConcurrencyKind.PARALLEL:
        return True
    return mode.kind is not ConcurrencyKind.SERIAL and tier is SafetyTier.READ_ONLY


def resource_arguments(mode: Concurrency, tool: Tool) -> tuple[str, ...]:
    """The arguments naming an ``exclusive_by_type`` call's resource."""
    if mode.keys:
        return mode.keys
    paths: Mapping[str, str] = getattr(tool, "path_arguments", None) or {}
    return tuple(paths)


def unknown_arguments(mode: Concurrency, tool: Tool) -> list[str]:
    """The argument names ``mode`` keys on that ``tool`` does not declare."""
    declared = tool.schema().parameters.get("properties", {})
    return [name for name in mode.keys if name not in declared]


class ResourceLocks:
    """One lock per ``(type, key)`` resource, present only while a call holds it.

    A free resource is taken without waiting or allocating; a taken one queues its callers
    in order, and :meth:`release` hands it straight to the first of them.
    """

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], deque[anyio.Event]] = {}

    def __len__(self) -> int:
        return len(self._held)

    async def acquire(self, resource: tuple[str, str]) -> None:
        waiters = self._held.get(resource)
        if waiters is None:
            self._held[resource] = deque()
            return
        turn = anyio.Event()
        waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():  # handed over as the wait was cancelled: pass it on
                self.release(resource)
            else:
                waiters.remove(turn)
            raise

    def release(self, resource: tuple[str, str]) -> None:
        waiters = self._held[resource]
        if waiters:
            waiters.popleft().set()
        else:
            del self._held[resource]


@dataclass(slots=True)
class ToolGate:
    """What a call of one ``limited`` or ``exclusive_by_type`` tool waits on."""

    mode: Concurrency
    resources: ResourceLocks
    """The runtime's resource locks (``exclusive_by_type``)."""
    arguments: tuple[str, ...] = ()
    """The arguments that name the resource (``exclusive_by_type``)."""
    waiting: int = 0
    """Calls of this tool waiting for their turn now."""
    running: int = 0
    """Calls of this tool past the gate now."""
    _permits: anyio.Semaphore | None = field(default=None, repr=False)

    async def run(self, work: Callable[[], Awaitable[T]], args: Mapping[str, Any]) -> T:
        """``await work()`` once this call may run (see the module docstring)."""
        permits = None
        taken: list[tuple[str, str]] = []
        self.waiting += 1
        try:
            if self.mode.kind is ConcurrencyKind.LIMITED:
                permits = self._permits
                if permits is None:  # made in the event loop that uses it
                    permits = self._permits = anyio.Semaphore(self.mode.limit, fast_acquire=True)
                await permits.acquire()
            else:
                for resource in self.resources_of(args):
                    await self.resources.acquire(resource)
                    taken.append(resource)
        except BaseException:
            self._release(taken)
            raise
        finally:
            self.waiting -= 1
        self.running += 1
        try:
            return await work()
        finally:
            self.running -= 1
            if permits is not None:
                permits.release()
            else:
                self._release(taken)

    def resources_of(self, args: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The resources a call with ``args`` holds, sorted (the order they are taken in)."""
        resource = self.mode.resource
        keys = {_key(args[name]) for name in self.arguments if args.get(name) is not None}
        return [(resource, key) for key in sorted(keys)] or [(resource, "")]

    def _release(self, taken: list[tuple[str, str]]) -> None:
        for resource in reversed(taken):
            self.resources.release(resource)


def _key(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class ConcurrencyGates:
    """Each tool's mode and gate, resolved once per tool name, and the runtime's resource
    locks that every ``exclusive_by_type`` gate shares."""

    def __init__(self, tool_limits: ToolLimitsTable) -> None:
        self.tool_limits = tool_limits
        self.resources = ResourceLocks()
        self._gates: dict[str, ToolGate | None] = {}

    def mode(self, name: str, tool: Tool) -> Concurrency:
        """The operator's mode for ``name``, else the one ``tool`` declares or defaults to."""
        configured = self.tool_limits.of(name, tool.timeout).concurrency
        return configured if configured is not None else declared_concurrency(tool)

    def runs_beside_siblings(self, name: str, tool: Tool) -> bool:
        """Whether a call of ``name`` may run concurrently with its neighbours in a turn."""
        return runs_beside_siblings(self.mode(name, tool), tool.safety_tier)

    def waiting(self, name: str) -> int:
        """Calls of ``name`` waiting at its gate now (0 for a tool without one)."""
        gate = self._gates.get(name)
        return 0 if gate is None else gate.waiting

    def running(self, name: str) -> int:
        """Calls of ``name`` past its gate now (0 for a tool without one)."""
        gate = self._gates.get(name)
        return 0 if gate is None else gate.running

    def of(self, name: str, tool: Tool) -> ToolGate | None:
        """The gate calls of ``name`` wait on; ``None`` for ``parallel`` and ``serial``."""
        try:
            return self._gates[name]
        except KeyError:
            pass
        mode = self.check(name, tool)
        gate = None
        if mode.gated:
            gate = ToolGate(mode, self.resources, resource_arguments(mode, tool))
        return self._gates.setdefault(name, gate)

    def check(self, name: str, tool: Tool) -> Concurrency:
        """The mode of ``name``, refused when it keys on arguments the tool lacks:
        :class:`ConfigError` for the operator's mode, :class:`UsageError` for a declared one."""
        mode = self.mode(name, tool)
        unknown = unknown_arguments(mode, tool)
        if unknown:
            configured = self.tool_limits.of(name, tool.timeout).concurrency is not None
            where = f"tools.{name}.concurrency" if configured else f"tool {name!r}"
            problem = (
                f"{where}: {mode.text} names {', '.join(map(repr, unknown))}, which "
                f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                f"of {name}"
            )
            raise (ConfigError if configured else UsageError)(problem)
        return mode
