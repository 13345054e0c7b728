"""OpenTelemetry spans and metrics of tool calls (needs ``opentelemetry-api``).

Each call gets a span named ``execute_tool {tool}``, following the OpenTelemetry semantic
conventions for generative AI tool execution: ``gen_ai.operation.name`` is
``execute_tool``, with ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and
``gen_ai.tool.type``; a failed call has ``error.type`` (its ``error_type``) and an error
status. The span is a child of the caller's current span and is current while the tool
runs, so what the tool traces nests beneath it. Its events mark where the pipeline's steps
began (``approval``, ``policy_checks``, ``execute``); the agent (``gen_ai.agent.id``, the
``[agents.NAME]`` profile), the session (``gen_ai.conversation.id``), the tier and the
policy decisions are attributes set when the call ends: ``toolcage.{policy}.allowed`` and
``toolcage.{policy}.reason`` for each policy that decided (``approval``, ``path``,
``shell``, ``egress``, ``rate_limit``; a later verdict of the same policy, such as a
redirect's, wins). A reason may quote the arguments (a refused shell command, say): it is
redacted by the runtime's :class:`~toolcage.policies.Redactor` before it is cut to 256
characters. The status's description is the error message (every one redacted by the
pipeline), cut.

Metrics: the counter ``toolcage.tool.calls`` and the histogram ``toolcage.tool.duration``
(seconds), each with ``gen_ai.tool.name`` (``unknown`` for a name no tool has, which keeps
the series bounded whatever a model writes), ``toolcage.outcome`` (``success`` or the
``error_type``) and ``error.type`` on failures.

What the SDK does for a span is most of the cost: the start attributes are checked twice
(by the sampler and the span), so only the four the conventions give at creation are
passed then, the rest in one ``set_attributes`` at the end; events are added at the end
with the times the trace kept. The metric attributes are one dict per tool and outcome.

No exporter is chosen here: spans and metrics go to the providers given, or to the global
ones the host configured (none: the API's no-op).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode

from .._observe import CallObserver, CallTrace
from .._version import toolcage_version


class ToolTelemetry(CallObserver):
    """A call observer that traces and measures tool calls.

    >>> telemetry = ToolTelemetry(tracer_provider=provider, meter_provider=meters)
    >>> runtime = Runtime.from_config("toolcage.toml", telemetry=telemetry)

    Without providers it uses the global ones (``opentelemetry.trace.set_tracer_provider``).
    """

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: otel_metrics.MeterProvider | None = None,
        traces: bool = True,
        metrics: bool = True,
    ) -> None:
        self._tracer = (
            trace.get_tracer("toolcage", toolcage_version(), tracer_provider) if traces else None
        )
        self._calls = self._durations = None
        if metrics:
            meter = otel_metrics.get_meter("toolcage", toolcage_version(), meter_provider)
            self._calls = meter.create_counter(
                "toolcage.tool.calls", unit="{call}", description="Tool calls, by outcome"
            )
            self._durations = meter.create_histogram(
                "toolcage.tool.duration", unit="s", description="Duration of tool calls"
            )
        self._labels: dict[tuple[str, str | None], dict[str, str]] = {}
        """The attributes of the metric points, per tool and error type (bounded: tool
        names are the registry's, error types a closed set)."""
        self._open: dict[int, tuple[Span, object | None, int]] = {}
        """Span, context token and start (ns since the epoch) of each running call."""

    def call_started(self, trace_: CallTrace) -> None:
        if self._tracer is None:
            return
        started_ns = time.time_ns()
        call = trace_.call
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
            start_time=started_ns,
        )
        token = None
        if span.is_recording() or span.get_span_context() != _current_span_context():
            # current while the tool runs, so that what it traces nests beneath it; a span
            # that neither records nor differs from the caller's (the API without an SDK)
            # would change nothing there
            token = otel_context.attach(trace.set_span_in_context(span))
        self._open[id(trace_)] = (span, token, started_ns)

    def call_ended(self, trace_: CallTrace) -> None:
        result = trace_.result
        error = None if result is None else result.error
        error_type = None if error is None else error.kind.value
        if self._calls is not None and self._durations is not None:
            tool = trace_.call.name if trace_.tier is not None else "unknown"
            attributes = self._labels.get((tool, error_type))
            if attributes is None:
                attributes = self._labels[(tool, error_type)] = _labels(tool, error_type)
            self._calls.add(1, attributes)
            self._durations.record(0.0 if result is None else result.duration, attributes)
        opened = self._open.pop(id(trace_), None)
        if opened is None:
            return
        span, token, started_ns = opened
        try:
            if span.is_recording():  # a span sampled out is not worth describing
                _describe(span, trace_, started_ns, error_type)
                if error is not None:
                    # the pipeline redacted every error message already
                    span.set_status(Status(StatusCode.ERROR, error.message[:256]))
            span.end(end_time=started_ns + int(trace_.duration * 1e9))
        finally:
            if token is not None:
                otel_context.detach(token)  # type: ignore[arg-type]  # the token attach gave


def _labels(tool: str, error_type: str | None) -> dict[str, str]:
    """The attributes of a call's metric points."""
    labels = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "toolcage.outcome": error_type or "success",
    }
    if error_type is not None:
        labels["error.type"] = error_type
    return labels


def _current_span_context() -> SpanContext:
    return trace.get_current_span().get_span_context()


def _describe(span: Span, trace_: CallTrace, started_ns: int, error_type: str | None) -> None:
    """The steps of the call as events; its agent, session, tier, decisions and error type
    as attributes."""
    started = trace_.started
    for name, at in trace_.steps:
        span.add_event(name, timestamp=started_ns + int((at - started) * 1e9))
    ctx = trace_.context
    attributes: dict[str, Any] = {
        "gen_ai.agent.id": ctx.agent_id,
        "gen_ai.conversation.id": ctx.session_id,
    }
    if trace_.tier is not None:
        attributes["toolcage.tool.tier"] = trace_.tier.value
    redactor = trace_.redactor
    for decision in list(trace_.decisions):
        attributes[f"toolcage.{decision.policy}.allowed"] = decision.allowed
        attributes[f"toolcage.{decision.policy}.reason"] = redactor.text(decision.reason)[:256]
    if error_type is not None:
        attributes["error.type"] = error_type
    span.set_attributes(attributes)
