"""One round of the agent loop: a model response's tool calls, run and answered in order.

Scheduling. A run of consecutive ``read_only`` calls runs concurrently (one anyio task
group); any other call runs alone, in the model's order, after everything before it. So a
write never overlaps anything, and results always go back in the model's call order.

Deferred approval. A call that needs an approver (a ``privileged`` tool the operator did
not allow outright) does not hold the round up: its approval is asked at once
(:meth:`~.._approval.SafetyGate.decide_ahead`) while the other calls run as above, and it
runs -- alone, in call order among its kind -- once they have finished and it has its
answer. Its start event therefore follows theirs; its result still goes back in its place.

Timeout retry. A ``read_only`` call that times out is idempotent, so it is run again, up to
``[loop] timeout_retries`` times, after ``timeout_backoff`` seconds, doubling each time
(``sleep`` is injectable). A timeout that stands says in its ``details`` how many attempts
were made and whether it was retry-eligible.

Timestamps. Each outcome carries when its result was ready (ISO 8601 UTC).

Abort. When the host sets ``abort``, running calls are cancelled and calls that had not
finished get a ``cancelled`` result.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
from toolcage.policies import LoopLimits

from .._decoding import decode_arguments
from .._errors import ErrorKind, ToolCancelledError, ToolError, ToolNotFoundError
from .._host import ToolHost
from .._result import ToolResult
from .._tool import SafetyTier, Tool, ToolCall, ToolExecutionContext
from .providers.base import ToolOutcome

T = TypeVar("T")

Sleep = Callable[[float], Awaitable[None]]
"""Waits that many seconds (``anyio.sleep``; tests inject their own)."""


def timestamp(at: datetime | None = None) -> str:
    """``at`` (default: now) as ISO 8601 UTC with milliseconds: ``2026-01-31T12:00:00.000Z``."""
    moment = datetime.now(UTC) if at is None else at.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def unless_aborted(work: Callable[[], Awaitable[T]], abort: anyio.Event) -> T | None:
    """``await work()``, or ``None`` if ``abort`` is set first (the work is cancelled)."""
    box: list[T] = []
    failures: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            await abort.wait()
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            box.append(await work())
        except Exception as exc:  # re-raised below as itself, not as an ExceptionGroup
            failures.append(exc)
        group.cancel_scope.cancel()
    if failures:
        raise failures[0]
    return box[0] if box else None


async def execute_round(
    runtime: ToolHost,
    calls: Sequence[ToolCall],
    ctx: ToolExecutionContext,
    abort: anyio.Event,
    limits: LoopLimits,
    sleep: Sleep,
) -> list[ToolOutcome]:
    """Run ``calls`` (see the module docstring); one outcome per call, in call order."""
    outcomes: list[ToolOutcome | None] = [None] * len(calls)
    deferred = _awaiting_approval(runtime, calls, ctx)

    async def run_one(index: int) -> None:
        result = await _with_timeout_retries(runtime, calls[index], ctx, limits, sleep)
        outcomes[index] = ToolOutcome(calls[index], result, timestamp())

    async def ask(index: int, tool: Tool, args: Mapping[str, Any]) -> None:
        call = calls[index]
        await runtime.gate.decide_ahead(call.name, tool, args, ctx.for_call(call.id, ctx.progress))

    async def run_others() -> None:
        others = [i for i in range(len(calls)) if i not in deferred]
        for batch in _batches(runtime, calls, others, ctx.agent_id):
            if len(batch) == 1:
                await run_one(batch[0])
                continue
            async with anyio.create_task_group() as group:
                for index in batch:
                    group.start_soon(run_one, index)

    async def run_all() -> None:
        async with anyio.create_task_group() as group:
            for index, (tool, args) in deferred.items():
                group.start_soon(ask, index, tool, args)
            await run_others()
        for index in deferred:
            await run_one(index)

    try:
        await unless_aborted(run_all, abort)
    finally:
        runtime.gate.forget(ctx, [calls[index].id for index in deferred])
    return [
        outcome
        if outcome is not None
        else ToolOutcome(
            call,
            ToolResult.failure(
                call.name,
                ToolCancelledError(f"Tool {call.name} was cancelled: the turn was aborted"),
            ),
            timestamp(),
        )
        for call, outcome in zip(calls, outcomes, strict=True)
    ]


def _tool_of(runtime: ToolHost, call: ToolCall, agent_id: str) -> Tool | None:
    try:
        return runtime.registry.get(call.name, agent_id)
    except ToolNotFoundError:
        return None


def _awaiting_approval(
    runtime: ToolHost, calls: Sequence[ToolCall], ctx: ToolExecutionContext
) -> dict[int, tuple[Tool, Mapping[str, Any]]]:
    """The calls whose approval is asked ahead: privileged ones with a unique id and valid
    arguments, which the approver is shown as the pipeline's gate sees them -- normalised
    (any other call goes through the pipeline as it is)."""
    ids = Counter(call.id for call in calls)
    deferred: dict[int, tuple[Tool, Mapping[str, Any]]] = {}
    for index, call in enumerate(calls):
        tool = _tool_of(runtime, call, ctx.agent_id)
        if tool is None or not call.id or ids[call.id] > 1:
            continue
        if not runtime.gate.needs_approval(call.name, tool):
            continue
        try:
            args = decode_arguments(call.arguments, runtime.config.limits.max_argument_bytes)
            args = runtime.pipeline.prepared(call.name, args)
        except ToolError:
            continue
        deferred[index] = (tool, args)
    return deferred


def _batches(
    runtime: ToolHost, calls: Sequence[ToolCall], indices: Sequence[int], agent_id: str
) -> list[list[int]]:
    """``indices`` grouped into runs: consecutive calls that may run beside their siblings
    (``read_only`` ones, unless their concurrency mode says ``serial``; any declared
    ``parallel``) share a batch."""
    batches: list[list[int]] = []
    previous_read_only = False
    for index in indices:
        call = calls[index]
        tool = _tool_of(runtime, call, agent_id)
        read_only = tool is not None and runtime.pipeline.gates.runs_beside_siblings(
            call.name, tool
        )
        if read_only and previous_read_only:
            batches[-1].append(index)
        else:
            batches.append([index])
        previous_read_only = read_only
    return batches


async def _with_timeout_retries(
    runtime: ToolHost,
    call: ToolCall,
    ctx: ToolExecutionContext,
    limits: LoopLimits,
    sleep: Sleep,
) -> ToolResult:
    """The call's result, a timed-out ``read_only`` call run again with backoff."""
    result = await runtime.execute_call(call, ctx)
    if not _timed_out(result):
        return result
    tool = _tool_of(runtime, call, ctx.agent_id)
    eligible = tool is not None and tool.safety_tier is SafetyTier.READ_ONLY
    attempts = 1
    waited: list[float] = []
    while eligible and attempts <= limits.timeout_retries:
        delay = limits.timeout_backoff * 2 ** (attempts - 1)
        await sleep(delay)
        waited.append(delay)
        result = await runtime.execute_call(call, ctx)
        attempts += 1
        if not _timed_out(result):
            return result
    error = result.error
    if error is None:  # pragma: no cover - _timed_out says there is one
        return result
    details = {
        **(error.details or {}),
        "retryable": eligible,
        "attempts": attempts,
        "backoff_seconds": waited,
    }
    retried = type(error)(error.message, field=error.field, details=details)
    return dataclasses.replace(result, error=retried)


def _timed_out(result: ToolResult) -> bool:
    return result.error is not None and result.error.kind is ErrorKind.TIMEOUT
