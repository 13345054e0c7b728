"""``delegate_to_agent``: hand a self-contained goal to another agent profile and get its
answer back.

The delegate is an ``[agents.NAME]`` profile: its tools (the registry's per-agent set),
its model (one of the model clients the host gave ``Runtime.from_config(models=...)``,
named by the profile's ``model``) and its system prompt. The tool runs one nested
:func:`~toolcage.runtime.run_turn` as that agent, for the same user and channel, through
the same runtime: its calls pass the same pipeline, so the path, shell and egress policies
and the approval policy apply to them as to any call. The goal is all it is told: it gets
a session of its own (``SESSION/AGENT``, so its scratchpad is not the caller's) and none of
the turn's attachments.

Budgets are the operator's (``[delegation]``: ``max_turns`` model calls, ``max_cost``),
never arguments. Loops cannot happen: the context carries the delegation depth, a turn
``max_depth`` levels down cannot delegate further, and no agent delegates to itself. The
tool's own timeout (``[tools.delegate_to_agent] timeout``) bounds the whole nested turn.

Session kind. The delegate runs as the profile's ``session`` kind: a ``branch`` by default
(what it sends with ``send_media`` or ``send_message`` goes to the delegating session's
channel), or a ``worker`` (read-only: no channel, no state store, no writes; see
:class:`~.._tool.SessionKind`). Its context records the chain of sessions above it, so an
approval it needs goes up to the first of them that has a channel (see :mod:`.._approval`).
What it sent reached the user already; the result lists the media beside its answer.

The result speaks to both audiences (see :mod:`.._result`): its details are what the caller
decides on -- how the nested turn stopped, its rounds, calls and failed calls, cost and
tokens --, its display line says so for a person ("Delegated to researcher: completed after
2 rounds (1 call)"), and its artifacts are those of the nested turn's successful calls, a
nested delegate's included, so the host tracks what the delegate changed as if the caller
had. A nested call's truncation record is left out: the handle it names belongs to the
delegate's session, where the caller cannot read it.

A host tool, not a WASI guest: it opens no file, socket or process itself -- each effect
of the nested turn is a call of another tool, run (and sandboxed) as that tool is -- and a
guest would only pass its two strings to the host and then hold a wasm instance and a
worker thread for the whole nested turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from toolcage.policies import AgentConfig, LoopLimits, SessionKind, ToolcageConfig

from .._errors import (
    PermissionDeniedError,
    ToolExecutionError,
    ToolValidationError,
    UsageError,
)
from .._host import ToolHost
from .._result import ARTIFACTS_TRUNCATED, Artifact, ToolResult
from .._tool import FunctionDecl, SafetyTier, ToolExecutionContext
from ._loop import TurnResult, run_turn
from ._model_client import ModelAPIError, ModelClient
from .providers.base import ToolOutcome, UserMessage

NAME = "delegate_to_agent"
DEFAULT_TIMEOUT = 600.0
MAX_GOAL_CHARS = 20000


class DelegateToAgent:
    """The ``delegate_to_agent`` tool over the ``[agents.*]`` profiles of a config.

    ``Runtime.from_config(models=...)`` builds and attaches it; by hand::

        delegate = DelegateToAgent(config, {"default": client})
        runtime = Runtime(config, tools=[delegate, ...])
        delegate.attach(runtime)
    """

    safety_tier = SafetyTier.SIDE_EFFECTING
    timeout = DEFAULT_TIMEOUT
    needs = ("agent loop",)

    def __init__(self, config: ToolcageConfig, models: Mapping[str, ModelClient]) -> None:
        self._agents: Mapping[str, AgentConfig] = dict(config.agents)
        self._models = dict(models)
        self._max_depth = config.delegation.max_depth
        self._limits: LoopLimits = config.loop.model_copy(
            update={
                "max_rounds": config.delegation.max_turns,
                "max_cost": config.delegation.max_cost,
            }
        )
        self._runtime: ToolHost | None = None
        self._decl = _declaration(self._agents)

    def attach(self, runtime: ToolHost) -> None:
        """Run delegated turns through ``runtime`` (the one this tool is registered in)."""
        self._runtime = runtime

    def schema(self) -> FunctionDecl:
        return self._decl

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        """Run the nested turn; its answer, stop reason, cost and media as JSON."""
        runtime = self._runtime
        if runtime is None:
            raise UsageError(f"{NAME} is not attached to a runtime (DelegateToAgent.attach)")
        name, goal = str(args["agent"]), str(args["goal"]).strip()
        agent = self._agents.get(name)
        if agent is None:
            known = ", ".join(sorted(self._agents)) or "none are configured"
            raise ToolValidationError(f"no agent {name!r}; agents: {known}", field="agent")
        if name == ctx.agent_id:
            raise ToolValidationError(
                f"agent {name!r} is the caller itself; do the work, or pick another agent",
                field="agent",
            )
        if not goal:
            raise ToolValidationError("goal is empty; say what the agent should do", field="goal")
        if ctx.delegation_depth >= self._max_depth:
            raise PermissionDeniedError(
                f"delegation depth limit reached ({self._max_depth} "
                f"level{'s' if self._max_depth != 1 else ''}, [delegation] max_depth): "
                "this turn cannot delegate further; do the work itself"
            )
        client = self._models.get(agent.model)
        if client is None:
            raise ToolExecutionError(
                f"agent {name!r} runs on model {agent.model!r}, which the host did not provide "
                "(Runtime.from_config(models=...))"
            )
        nested = ctx.child(
            SessionKind(agent.session), agent_id=name, session_id=f"{ctx.session_id}/{name}"
        )
        try:
            turn = await run_turn(
                client,
                runtime,
                [UserMessage(goal)],
                context=nested,
                system=agent.system_prompt,
                limits=self._limits,
            )
        except ModelAPIError as exc:
            raise ToolExecutionError(f"agent {name!r}: the model failed: {exc}") from exc
        answer = {
            "agent": name,
            "answer": turn.text,
            "stop": turn.stop.value,
            "rounds": turn.rounds,
            "cost": round(turn.cost, 6),
            "media": list(_media_sent(turn.calls)),
        }
        return ToolResult.text(
            json.dumps(answer, ensure_ascii=False),
            details=_details(name, turn),
            display=_display(name, turn),
            artifacts=tuple(_artifacts(turn.calls)),
        )


def _details(agent: str, turn: TurnResult) -> dict[str, Any]:
    """What a caller decides on: how the nested turn ended and what it spent."""
    return {
        "agent": agent,
        "stop": turn.stop.value,
        "rounds": turn.rounds,
        "calls": len(turn.calls),
        "failed_calls": sum(1 for outcome in turn.calls if outcome.result.is_error),
        "cost": round(turn.cost, 6),
        "input_tokens": turn.usage.input_tokens,
        "output_tokens": turn.usage.output_tokens,
    }


def _display(agent: str, turn: TurnResult) -> str:
    rounds, calls = turn.rounds, len(turn.calls)
    return (
        f"Delegated to {agent}: {turn.stop.value} after {rounds} round{'s' * (rounds != 1)} "
        f"({calls} call{'s' * (calls != 1)})"
    )


def _artifacts(calls: Sequence[ToolOutcome]) -> Iterator[Artifact]:
    """The artifacts of the successful calls, without truncation records (see the module
    docstring)."""
    for outcome in calls:
        if not outcome.result.is_error:
            yield from (a for a in outcome.result.artifacts if a.kind != ARTIFACTS_TRUNCATED)


def _media_sent(calls: Sequence[ToolOutcome]) -> Iterator[dict[str, Any]]:
    """What the nested turn sent with ``send_media``, its own delegates' included."""
    for outcome in calls:
        if outcome.result.is_error or outcome.call.name not in ("send_media", NAME):
            continue
        try:
            value = json.loads(outcome.result.output_text)
        except ValueError:
            continue
        if outcome.call.name == NAME:
            yield from value.get("media", ())
        else:
            yield value


def _declaration(agents: Mapping[str, AgentConfig]) -> FunctionDecl:
    described = "; ".join(
        f"{name}: {agent.description}" if agent.description else name
        for name, agent in sorted(agents.items())
    )
    return FunctionDecl(
        name=NAME,
        description=(
            "Hand a self-contained goal to another agent and get back its answer (and what "
            f"files it sent the user). Agents: {described or 'none'}."
        ),
        parameters={
            "type": "object",
            "properties": {
                "agent": {
                    "type": "string",
                    "enum": sorted(agents),
                    "description": "The agent to hand the goal to.",
                },
                "goal": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_GOAL_CHARS,
                    "description": (
                        "A complete instruction: the agent does not see this conversation."
                    ),
                },
            },
            "required": ["agent", "goal"],
            "additionalProperties": False,
        },
    )
