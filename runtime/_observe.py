"""What the pipeline tells observers about each call: the audit log, OpenTelemetry.

The pipeline holds an :class:`Observation` only when some observer is configured; without
one it makes no :class:`CallTrace` and calls nothing here, so a runtime without an audit
log or telemetry pays five ``is None`` tests a call. With one, each call gets a
:class:`CallTrace` that collects, as the call runs: the steps it entered (with their
``perf_counter`` times), the policy decisions with their reasons, and finally the result.
Observers see the trace when the call starts, each approval decision when it is made, and
the trace again when the call ends.

The trace of the running call is also reachable through :func:`current_trace`, so that a
tool can report the decisions it makes while it runs: a guest's ``http`` binding reports
each egress verdict on its worker thread through ``CallState.decide``
(:meth:`CallTrace.decide` only appends, which is safe from any thread).

Observers must be cheap and must not raise: whatever they do runs inside the call. One
that raises anyway is logged and ignored, since watching must never change the outcome.

A trace carries the runtime's :class:`~toolcage.policies.Redactor`: whatever an observer
sends out of the process (a record, a span) passes through it, and an observer an embedder
made once and shares between runtimes still redacts each call with its own runtime's
secrets and rules.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolcage.policies import Redactor

from ._errors import ToolError
from ._result import ToolResult
from ._tool import SafetyTier, Tool, ToolCall, ToolExecutionContext

if TYPE_CHECKING:
    from ._approval import SafetyGate
    from ._security import SecurityCheck

logger = logging.getLogger("toolcage")


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """One verdict of a policy about a call."""

    policy: str
    """Which policy decided: ``approval``, ``path``, ``shell``, ``egress`` (or the
    ``policy_name`` of an embedder's own check)."""
    allowed: bool
    """Whether the call (or the request) was let through."""
    reason: str
    """Why: how an approval was given, what a refusal said, which host a request went to."""


class CallTrace:
    """What one call did, collected while it runs (only when something observes)."""

    __slots__ = (
        "arguments",
        "call",
        "context",
        "decisions",
        "ended",
        "observers",
        "redactor",
        "result",
        "started",
        "started_at",
        "steps",
        "tier",
        "token",
    )

    def __init__(
        self,
        call: ToolCall,
        context: ToolExecutionContext,
        observers: tuple[CallObserver, ...],
        redactor: Redactor,
    ) -> None:
        self.started_at = time.time()
        """Wall-clock time the call started (seconds since the epoch)."""
        self.started = time.perf_counter()
        self.ended = 0.0
        """``perf_counter`` when the call ended."""
        self.call = call
        self.context = context
        self.observers = observers
        self.redactor = redactor
        """What anything an observer sends out of the process passes through."""
        self.arguments: Mapping[str, Any] | str = call.arguments
        """The arguments the call ran with: as the safety gate saw them (rewritten by
        before hooks, normalised, validated; the security checks may still make a path
        canonical), or, for a call that ended before the gate, as decoded (as given, when
        they did not decode)."""
        self.tier: SafetyTier | None = None
        """The tool's tier, once the tool was found."""
        self.steps: list[tuple[str, float]] = []
        """Each pipeline step entered, with its ``perf_counter`` time: ``approval`` (the
        safety gate), ``policy_checks`` and ``execute``. What comes before the first (the
        lookup, decoding, before hooks, normalising and validating the arguments) begins
        with the call; what follows the last (bounding the result, after hooks) ends with
        it."""
        self.decisions: list[PolicyDecision] = []
        self.result: ToolResult | None = None
        """The result the caller got, once the call ended."""
        self.token: Token[CallTrace | None] | None = None

    def step(self, name: str) -> None:
        """The call enters pipeline step ``name``."""
        self.steps.append((name, time.perf_counter()))

    def decide(self, policy: str, allowed: bool, reason: str) -> None:
        """Record a policy's verdict (from any thread)."""
        self.decisions.append(PolicyDecision(policy, allowed, reason))

    @property
    def duration(self) -> float:
        return self.ended - self.started

    def found(self, tool: Tool, arguments: Mapping[str, Any]) -> None:
        """The tool exists and its arguments decoded."""
        self.tier = tool.safety_tier
        self.arguments = arguments

    async def admit(
        self,
        gate: SafetyGate,
        tool: Tool,
        arguments: Mapping[str, Any],
        ctx: ToolExecutionContext,
    ) -> None:
        """The safety gate's decision on ``arguments`` (which become the trace's),
        recorded and shown to the observers at once."""
        self.arguments = arguments
        self.step("approval")
        try:
            how = await gate.admit(self.call.name, tool, arguments, ctx)
        except ToolError as exc:
            self._approval(PolicyDecision("approval", False, exc.message))
            raise
        if how is not None:
            self._approval(PolicyDecision("approval", True, how))

    def check(
        self,
        checks: Sequence[SecurityCheck],
        tool: Tool,
        arguments: Mapping[str, Any],
        ctx: ToolExecutionContext,
    ) -> Mapping[str, Any]:
        """Run the security checks, recording the verdict of each one that governs the tool
        (a check that names its ``policy_name`` and says it ``applies``, or that refuses)."""
        self.step("policy_checks")
        for check in checks:
            try:
                arguments = check.check(tool, arguments, ctx)
            except ToolError as exc:
                self.decide(getattr(check, "policy_name", type(check).__name__), False, exc.message)
                raise
            applies = getattr(check, "applies", None)
            if applies is not None and applies(tool):
                self.decide(getattr(check, "policy_name", type(check).__name__), True, "allowed")
        self.step("execute")
        return arguments

    def end(self, result: ToolResult) -> None:
        """The call is over: ``result`` is what its caller gets."""
        self.ended = time.perf_counter()
        self.result = result
        if self.token is not None:
            # ValueError: ended in another context than it began (never by the pipeline)
            with contextlib.suppress(ValueError):
                _current.reset(self.token)
            self.token = None
        for observer in self.observers:
            try:
                observer.call_ended(self)
            except Exception:
                _observer_failed("end", self.call)

    def _approval(self, decision: PolicyDecision) -> None:
        self.decisions.append(decision)
        for observer in self.observers:
            try:
                observer.approval_decided(self, decision)
            except Exception:
                _observer_failed("approval", self.call)


def _observer_failed(stage: str, call: ToolCall) -> None:
    """Log the exception an observer raised at ``stage`` of ``call`` (and go on)."""
    logger.exception(
        "a call observer failed at the %s of %s",
        stage,
        call.name,
        extra={"event": "observer.failed", "stage": stage, "tool": call.name, "call_id": call.id},
    )


class CallObserver:
    """Watches calls (the audit log, telemetry); every method runs inside the call, so it
    must be quick. The methods do nothing here: an observer overrides what it needs."""

    def call_started(self, trace: CallTrace) -> None:
        """The call began: its trace holds the call and the context."""

    def approval_decided(self, trace: CallTrace, decision: PolicyDecision) -> None:
        """The safety gate decided (only privileged calls get here)."""

    def call_ended(self, trace: CallTrace) -> None:
        """The call is over: the trace holds its result, steps and decisions."""


_current: ContextVar[CallTrace | None] = ContextVar("toolcage_call_trace", default=None)


def current_trace() -> CallTrace | None:
    """The trace of the call running in this context, when the call is observed."""
    return _current.get()


class Observation:
    """The observers of a runtime; the pipeline asks it for a trace of each call."""

    def __init__(self, observers: Iterable[CallObserver], redactor: Redactor) -> None:
        self.observers: tuple[CallObserver, ...] = tuple(observers)
        self.redactor = redactor
        """The runtime's redactor, handed to the observers with each trace."""

    def begin(self, call: ToolCall, ctx: ToolExecutionContext) -> CallTrace:
        """A trace of ``call``, shown to the observers and current in this context until
        :meth:`CallTrace.end`."""
        trace = CallTrace(call, ctx, self.observers, self.redactor)
        trace.token = _current.set(trace)
        for observer in self.observers:
            try:
                observer.call_started(trace)
            except Exception:
                _observer_failed("start", call)
        return trace
