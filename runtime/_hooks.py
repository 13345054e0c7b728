"""Hooks around each tool call, and the events a call emits.

Hooks can change what happens; listeners only watch:

``before_tool_call(call, ctx)``
    May return :class:`Block` (the call ends with a ``blocked`` envelope carrying the reason)
    or :class:`Rewrite` (the call runs with other arguments); ``None`` lets it pass.
``after_tool_call(call, ctx, result)``
    Observes the final result.
``tool_result_persist(call, ctx, result)``
    May return a replacement result; what it returns is what the caller receives and stores
    (redact secrets here).

Events, delivered to listeners in order: :class:`ToolExecutionStart`,
:class:`ToolExecutionUpdate` (progress reported by the tool), :class:`ToolExecutionEnd`.
Hooks and listeners may be plain or ``async`` functions. A hook that raises fails the call
(``execution_error``); a listener that raises is logged and ignored, since watching must
never change the outcome.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, cast

from ._result import ToolResult
from ._tool import ProgressUpdate, ToolCall, ToolExecutionContext

logger = logging.getLogger("toolcage")

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]


@dataclass(frozen=True, slots=True)
class Block:
    """Returned by a before hook: refuse the call."""

    reason: str


@dataclass(frozen=True, slots=True)
class Rewrite:
    """Returned by a before hook: run the call with these arguments instead."""

    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolExecutionStart:
    call: ToolCall
    context: ToolExecutionContext


@dataclass(frozen=True, slots=True)
class ToolExecutionUpdate:
    call: ToolCall
    context: ToolExecutionContext
    update: ProgressUpdate


@dataclass(frozen=True, slots=True)
class ToolExecutionEnd:
    call: ToolCall
    context: ToolExecutionContext
    result: ToolResult


ToolEvent = ToolExecutionStart | ToolExecutionUpdate | ToolExecutionEnd
BeforeHook = Callable[[ToolCall, ToolExecutionContext], MaybeAwaitable[Block | Rewrite | None]]
AfterHook = Callable[[ToolCall, ToolExecutionContext, ToolResult], MaybeAwaitable[None]]
PersistHook = Callable[
    [ToolCall, ToolExecutionContext, ToolResult], MaybeAwaitable[ToolResult | None]
]
Listener = Callable[[ToolEvent], MaybeAwaitable[None]]


async def _resolve(value: MaybeAwaitable[T]) -> T:
    if inspect.isawaitable(value):
        return await cast(Awaitable[T], value)
    return value


class Hooks:
    """The hooks and listeners of a runtime.

    >>> hooks = Hooks()
    >>> def no_writes(call, ctx):
    ...     return Block("read-only hour") if call.name == "file_write" else None
    >>> hooks.before_tool_call(no_writes)
    >>> hooks.on_event(print)
    """

    def __init__(self) -> None:
        self.before: list[BeforeHook] = []
        self.after: list[AfterHook] = []
        self.persist: list[PersistHook] = []
        self.listeners: list[Listener] = []
        self._pending: set[asyncio.Future[None]] = set()

    def before_tool_call(self, hook: BeforeHook) -> BeforeHook:
        self.before.append(hook)
        return hook

    def after_tool_call(self, hook: AfterHook) -> AfterHook:
        self.after.append(hook)
        return hook

    def tool_result_persist(self, hook: PersistHook) -> PersistHook:
        self.persist.append(hook)
        return hook

    def on_event(self, listener: Listener) -> Listener:
        self.listeners.append(listener)
        return listener

    async def run_before(
        self, call: ToolCall, ctx: ToolExecutionContext
    ) -> tuple[Block | None, ToolCall]:
        """Run the before hooks; a block stops at once, rewrites accumulate."""
        for hook in self.before:
            outcome: Block | Rewrite | None = await _resolve(hook(call, ctx))
            if isinstance(outcome, Block):
                return outcome, call
            if isinstance(outcome, Rewrite):
                call = ToolCall(call.name, dict(outcome.arguments), call.id)
        return None, call

    async def run_after(
        self, call: ToolCall, ctx: ToolExecutionContext, result: ToolResult
    ) -> None:
        for hook in self.after:
            await _resolve(hook(call, ctx, result))

    async def run_persist(
        self, call: ToolCall, ctx: ToolExecutionContext, result: ToolResult
    ) -> ToolResult:
        for hook in self.persist:
            replacement: ToolResult | None = await _resolve(hook(call, ctx, result))
            if replacement is not None:
                result = replacement
        return result

    async def emit(self, event: ToolEvent) -> None:
        for listener in self.listeners:
            try:
                await _resolve(listener(event))
            except Exception:
                _listener_failed(event)

    def emit_sync(self, event: ToolEvent) -> None:
        """Deliver an event from synchronous code on the loop's thread; async listeners are
        scheduled as tasks. (The pipeline queues progress reports from worker threads here
        with ``loop.call_soon_threadsafe``, which keeps them ahead of the call's end event.)"""
        for listener in self.listeners:
            try:
                outcome = listener(event)
            except Exception:
                _listener_failed(event)
                continue
            if inspect.isawaitable(outcome):
                task: asyncio.Future[None] = asyncio.ensure_future(outcome)
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)


def _listener_failed(event: ToolEvent) -> None:
    kind = type(event).__name__
    logger.exception(
        "toolcage event listener failed on %s",
        kind,
        extra={"event": "hook.listener_failed", "tool_event": kind},
    )
