"""The agent loop: model → tool calls → results → model, until the model answers.

:func:`run_turn` sends the conversation and the agent's tools to a :class:`ModelClient`,
runs the calls of each response through the runtime's pipeline (``execute_call``: hooks,
events, approval, validation, checks, deadlines all apply), appends the results and asks
again, until the model answers without calls or a budget runs out.

Scheduling. A run of consecutive ``read_only`` calls runs concurrently (one anyio task
group); any other call runs alone, in the model's order, after everything before it. So a
write never overlaps anything, and results always go back in the model's call order.

Abort. When the host sets the ``abort`` event, the running tools are cancelled (each still
yields its ``cancelled`` result and end event, from the pipeline), calls that had not
started get a ``cancelled`` result too, the results go into the conversation so it stays
well-formed, and the turn returns with :attr:`StopReason.ABORTED` -- nothing is raised.

Validation-retry. A ``validation_error`` goes back to the model with the failing field and
the tool's schema, so it can correct the call. When the same tool fails validation again
after ``max_validation_retries`` retries, the turn stops with
:attr:`StopReason.VALIDATION_FAILED` and the error in :attr:`TurnResult.error`.

Conversation. When the runtime has a state store that records conversations (``[state]
record_conversation``, on by default), the turn's user message and final answer are
recorded for ``memory_search`` once the turn ends (see :mod:`._conversation`).

Budgets (rounds, tokens, cost, validation retries) come from the config's ``[loop]`` section
(:class:`~toolcage.policies.LoopLimits`) unless the call passes its own ``limits``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
from toolcage.policies import LoopLimits

from ._conversation import record_turn
from ._errors import ErrorKind, ToolCancelledError, ToolError, ToolNotFoundError
from ._model_client import ModelClient
from ._result import TextContent, ToolResult
from ._runtime import DEFAULT_CONTEXT, Runtime
from ._tool import FunctionDecl, SafetyTier, ToolCall, ToolExecutionContext
from .providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolOutcome,
    ToolResultsMessage,
    Usage,
)

T = TypeVar("T")


class StopReason(enum.StrEnum):
    """Why a turn ended."""

    COMPLETED = "completed"
    """The model answered without tool calls."""
    MAX_ROUNDS = "max_rounds"
    """The round budget ran out."""
    TOKEN_BUDGET = "token_budget"  # noqa: S105 - a stop reason, not a secret
    """The token budget ran out."""
    COST_BUDGET = "cost_budget"
    """The cost budget ran out."""
    ABORTED = "aborted"
    """The host aborted the turn."""
    VALIDATION_FAILED = "validation_failed"
    """A call kept failing validation; see :attr:`TurnResult.error`."""


@dataclass(slots=True)
class TurnResult:
    """What a turn did."""

    messages: list[Message]
    """The whole conversation, with everything this turn added."""
    stop: StopReason
    """Why it ended."""
    text: str = ""
    """The model's last text."""
    rounds: int = 0
    """Model calls made."""
    usage: Usage = field(default_factory=Usage)
    """Tokens of the whole turn (what the provider reported)."""
    round_usage: list[Usage | None] = field(default_factory=list)
    """Tokens per model call; ``None`` where the provider reported none."""
    calls: list[ToolOutcome] = field(default_factory=list)
    """Every call executed, with its result, in order."""
    error: ToolError | None = None
    """The surfaced validation error, when ``stop`` is ``validation_failed``."""
    cost: float = 0.0
    """What the turn cost at the prices of its :class:`LoopLimits`."""


async def run_turn(
    client: ModelClient,
    runtime: Runtime,
    messages: Sequence[Message],
    *,
    context: ToolExecutionContext | None = None,
    system: str = "",
    tools: Sequence[FunctionDecl] | None = None,
    limits: LoopLimits | None = None,
    abort: anyio.Event | None = None,
) -> TurnResult:
    """Run the model and its tool calls until it answers (see the module docstring)."""
    ctx = context or DEFAULT_CONTEXT
    turn = await _run_rounds(
        client,
        runtime,
        messages,
        ctx,
        system,
        tools,
        limits or runtime.config.loop,
        abort or anyio.Event(),
    )
    await record_turn(runtime.state, ctx, messages, turn.text)
    return turn


async def _run_rounds(
    client: ModelClient,
    runtime: Runtime,
    messages: Sequence[Message],
    ctx: ToolExecutionContext,
    system: str,
    tools: Sequence[FunctionDecl] | None,
    limits: LoopLimits,
    abort: anyio.Event,
) -> TurnResult:
    """The model's rounds and their tool calls, until it answers or a budget runs out."""
    decls = list(tools) if tools is not None else runtime.registry.declarations(ctx.agent_id)
    turn = TurnResult(list(messages), StopReason.COMPLETED)
    failures: dict[str, int] = {}
    while True:
        stop = StopReason.ABORTED if abort.is_set() else _budget_spent(turn, limits)
        if stop is not None:
            turn.stop = stop
            return turn
        request = ModelRequest(list(turn.messages), decls, system)
        response: ModelResponse | None = await _unless_aborted(
            functools.partial(client.complete, request), abort
        )
        if response is None:
            turn.stop = StopReason.ABORTED
            return turn
        turn.rounds += 1
        turn.round_usage.append(response.usage)
        if response.usage is not None:
            turn.usage += response.usage
            turn.cost += limits.cost(response.usage.input_tokens, response.usage.output_tokens)
        turn.messages.append(response.message)
        turn.text = response.message.text
        calls = response.message.calls
        if not calls:
            turn.stop = StopReason.COMPLETED
            return turn
        results = await _execute_round(runtime, calls, ctx, abort)
        outcomes = [ToolOutcome(c, r) for c, r in zip(calls, results, strict=True)]
        turn.calls.extend(outcomes)
        sent: list[ToolOutcome] = []
        for outcome in outcomes:
            feedback, surfaced = _retry_feedback(runtime, outcome, ctx, failures, limits)
            sent.append(feedback)
            if surfaced is not None and turn.error is None:
                turn.error = surfaced
        turn.messages.append(ToolResultsMessage(tuple(sent)))
        if abort.is_set():
            turn.stop = StopReason.ABORTED
            return turn
        if turn.error is not None:
            turn.stop = StopReason.VALIDATION_FAILED
            return turn


def _budget_spent(turn: TurnResult, limits: LoopLimits) -> StopReason | None:
    """Which budget, if any, forbids another model call."""
    if turn.rounds >= limits.max_rounds:
        return StopReason.MAX_ROUNDS
    if limits.max_total_tokens is not None and turn.usage.total_tokens >= limits.max_total_tokens:
        return StopReason.TOKEN_BUDGET
    if limits.max_cost is not None and turn.cost >= limits.max_cost:
        return StopReason.COST_BUDGET
    return None


async def _unless_aborted(work: Callable[[], Awaitable[T]], abort: anyio.Event) -> T | None:
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


def _batches(runtime: Runtime, calls: Sequence[ToolCall], agent_id: str) -> list[list[int]]:
    """Indices of calls grouped into runs: consecutive read-only calls share a batch."""
    batches: list[list[int]] = []
    previous_read_only = False
    for index, call in enumerate(calls):
        try:
            read_only = runtime.registry.get(call.name, agent_id).safety_tier is (
                SafetyTier.READ_ONLY
            )
        except ToolNotFoundError:
            read_only = False
        if read_only and previous_read_only:
            batches[-1].append(index)
        else:
            batches.append([index])
        previous_read_only = read_only
    return batches


async def _execute_round(
    runtime: Runtime, calls: Sequence[ToolCall], ctx: ToolExecutionContext, abort: anyio.Event
) -> list[ToolResult]:
    results: list[ToolResult | None] = [None] * len(calls)

    async def run_one(index: int) -> None:
        results[index] = await runtime.execute_call(calls[index], ctx)

    async def run_all() -> None:
        for batch in _batches(runtime, calls, ctx.agent_id):
            if len(batch) == 1:
                await run_one(batch[0])
                continue
            async with anyio.create_task_group() as group:
                for index in batch:
                    group.start_soon(run_one, index)

    await _unless_aborted(run_all, abort)
    return [
        result
        if result is not None
        else ToolResult.failure(
            call.name, ToolCancelledError(f"Tool {call.name} was cancelled: the turn was aborted")
        )
        for call, result in zip(calls, results, strict=True)
    ]


def _retry_feedback(
    runtime: Runtime,
    outcome: ToolOutcome,
    ctx: ToolExecutionContext,
    failures: dict[str, int],
    limits: LoopLimits,
) -> tuple[ToolOutcome, ToolError | None]:
    """The outcome as the model should see it, and the error to surface, if any."""
    name = outcome.call.name
    error = outcome.result.error
    if error is None or error.kind is not ErrorKind.VALIDATION_ERROR:
        if not outcome.result.is_error:
            failures.pop(name, None)
        return outcome, None
    failures[name] = failures.get(name, 0) + 1
    retries_left = limits.max_validation_retries - (failures[name] - 1)
    if retries_left <= 0:
        return outcome, error
    try:
        schema = runtime.registry.get(name, ctx.agent_id).schema().parameters
    except ToolNotFoundError:  # pragma: no cover - validation implies the tool exists
        return outcome, None
    where = f" The failing field is {error.field!r}." if error.field else ""
    text = (
        f"Invalid arguments for {name}: {error.message}.{where} "
        f"The arguments must match this JSON Schema: {json.dumps(schema, sort_keys=True)} "
        f"Correct the arguments and call {name} again "
        f"({retries_left} {'retry' if retries_left == 1 else 'retries'} left)."
    )
    result = dataclasses.replace(outcome.result, content=(TextContent(text),))
    return ToolOutcome(outcome.call, result), None
