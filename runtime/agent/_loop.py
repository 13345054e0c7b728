"""The agent loop: model → tool calls → results → model, until the model answers.

:func:`run_turn` sends the conversation and the agent's tools to a :class:`ModelClient`,
runs the calls of each response through the runtime's pipeline (``execute_call``: hooks,
events, approval, validation, checks, deadlines all apply), appends the results and asks
again, until the model answers without calls or a budget runs out.

Rounds. The calls of one response run as :mod:`._round` says: consecutive ``read_only``
calls concurrently, any other alone and in order; a call waiting for a human's approval
does not hold the others up; a timed-out ``read_only`` call is retried with backoff. Results
always go back in the model's call order, each with the time it finished
(:attr:`ToolOutcome.finished_at`).

Abort. When the host sets the ``abort`` event, the running tools are cancelled (each still
yields its ``cancelled`` result and end event, from the pipeline), calls that had not
started get a ``cancelled`` result too, the results go into the conversation so it stays
well-formed, and the turn returns with :attr:`StopReason.ABORTED` -- nothing is raised.

Client-side tools. A tool the host's client runs (``@tool(client_side=True)``) answers
with a ``pending`` result. When a round has one, the turn stops with
:attr:`StopReason.AWAITING_TOOL_RESULTS`: the conversation ends with the round's results,
the pending ones among them, and :attr:`TurnResult.pending` lists their call ids. The host
runs them and continues the turn with ``run_turn(client, runtime, turn.messages,
tool_results={call_id: result, ...})``: each pending result is replaced by the given one
(a :class:`ToolResult` or its text, bounded like any result) and the model is asked again;
the budgets count afresh from there. A turn awaiting results is not recorded (below) until
it ends.

Validation-retry. A ``validation_error`` goes back to the model with the failing field, the
part of the schema that field had to meet, and the tool's schema without its descriptions
(at most :data:`RETRY_SCHEMA_CHARS` characters), so it can correct the call. When the same
tool fails validation again after ``max_validation_retries`` retries, the turn stops with
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import anyio
from toolcage.policies import LoopLimits

from .._bounds import bound_result
from .._errors import ErrorKind, ToolError, ToolNotFoundError, UsageError
from .._host import ToolHost
from .._result import TextContent, ToolResult
from .._schema_messages import schema_excerpt
from .._tool import DEFAULT_CONTEXT, FunctionDecl, ToolExecutionContext
from ._conversation import record_turn
from ._model_client import ModelClient
from ._round import Sleep, execute_round, timestamp, unless_aborted
from .providers.base import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolOutcome,
    ToolResultsMessage,
    Usage,
)

RETRY_SCHEMA_CHARS = 2000
"""Longest tool schema quoted in a validation-retry message (descriptions left out)."""


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
    AWAITING_TOOL_RESULTS = "awaiting_tool_results"
    """Client-side calls wait for the host's results; see :attr:`TurnResult.pending`."""


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
    pending: list[str] = field(default_factory=list)
    """Ids of the client-side calls whose results the host gives next, when ``stop`` is
    ``awaiting_tool_results``."""


async def run_turn(
    client: ModelClient,
    runtime: ToolHost,
    messages: Sequence[Message],
    *,
    context: ToolExecutionContext | None = None,
    system: str = "",
    tools: Sequence[FunctionDecl] | None = None,
    limits: LoopLimits | None = None,
    abort: anyio.Event | None = None,
    tool_results: Mapping[str, ToolResult | str] | None = None,
    sleep: Sleep = anyio.sleep,
) -> TurnResult:
    """Run the model and its tool calls until it answers (see the module docstring).

    ``tool_results`` continue a turn that stopped awaiting client-side results: one per
    pending call id of the last message of ``messages``. ``sleep`` waits out the backoff of
    timeout retries.
    """
    ctx = context or DEFAULT_CONTEXT
    messages = _resumed(runtime, messages, tool_results or {}, ctx)
    turn = await _run_rounds(
        client,
        runtime,
        messages,
        ctx,
        system,
        tools,
        limits or runtime.config.loop,
        abort or anyio.Event(),
        sleep,
    )
    if turn.stop is not StopReason.AWAITING_TOOL_RESULTS:
        await record_turn(runtime.state, ctx, messages, turn.text)
    return turn


def _resumed(
    runtime: ToolHost,
    messages: Sequence[Message],
    given: Mapping[str, ToolResult | str],
    ctx: ToolExecutionContext,
) -> Sequence[Message]:
    """``messages`` with the pending results of its last message replaced by ``given``."""
    last = messages[-1] if messages else None
    if not isinstance(last, ToolResultsMessage):
        last = ToolResultsMessage(())
    waiting = {o.call.id for o in last.outcomes if o.result.pending_call is not None}
    if set(given) != waiting:
        missing, unknown = sorted(waiting - set(given)), sorted(set(given) - waiting)
        raise UsageError(
            "tool_results must answer exactly the pending calls of the last message"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; not pending: {', '.join(unknown)}" if unknown else "")
        )
    if not waiting:
        return messages
    outcomes = tuple(
        _client_outcome(runtime, o, given[o.call.id], ctx) if o.call.id in waiting else o
        for o in last.outcomes
    )
    return [*messages[:-1], ToolResultsMessage(outcomes)]


def _client_outcome(
    runtime: ToolHost, outcome: ToolOutcome, given: ToolResult | str, ctx: ToolExecutionContext
) -> ToolOutcome:
    """A pending outcome answered with the result the host's client gave."""
    name = outcome.call.name
    result = ToolResult.text(given) if isinstance(given, str) else given
    limit = runtime.pipeline.tool_limits.truncate_bytes(name)
    bounded = bound_result(
        result, limit, runtime.output_store, ctx.for_call(outcome.call.id, ctx.progress)
    )
    return ToolOutcome(outcome.call, bounded.finished(name, bounded.duration), timestamp())


async def _run_rounds(
    client: ModelClient,
    runtime: ToolHost,
    messages: Sequence[Message],
    ctx: ToolExecutionContext,
    system: str,
    tools: Sequence[FunctionDecl] | None,
    limits: LoopLimits,
    abort: anyio.Event,
    sleep: Sleep,
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
        response: ModelResponse | None = await unless_aborted(
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
        outcomes = await execute_round(runtime, calls, ctx, abort, limits, sleep)
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
        turn.pending = [o.call.id for o in outcomes if o.result.pending_call is not None]
        if turn.pending:
            turn.stop = StopReason.AWAITING_TOOL_RESULTS
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


def _retry_feedback(
    runtime: ToolHost,
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
    part = (error.details or {}).get("schema")
    if not part and error.field:  # a repair step's refusal: the field's own schema
        part = schema_excerpt(schema.get("properties", {}).get(error.field))
    where = f" The failing field is {error.field!r}." if error.field else ""
    if part and error.field:
        where += f" Its schema: {json.dumps(part, ensure_ascii=False)}."
    whole = json.dumps(schema_excerpt(schema, RETRY_SCHEMA_CHARS), ensure_ascii=False)
    text = (
        f"Invalid arguments for {name}: {error.message}.{where} "
        f"The arguments must match this JSON Schema: {whole} "
        f"Correct the arguments and call {name} again "
        f"({retries_left} {'retry' if retries_left == 1 else 'retries'} left)."
    )
    result = dataclasses.replace(outcome.result, content=(TextContent(text),))
    return dataclasses.replace(outcome, result=result), None
