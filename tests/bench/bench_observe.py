"""What observing calls costs: the no-op pipeline with the audit log on, with tracing on,
and with traces and metrics on, beside all of them off, measured in alternating rounds of
one run (a machine that gets busier meanwhile shifts every setting alike).

The audit log writes to a file in a temporary directory: its writer thread redacts,
encodes and writes on its own thread; each setting's calls start after a pause in which
the previous setting's writer is done, so the next setting does not pay for it. Tracing
uses the SDK's ``TracerProvider`` with a batch processor whose exporter discards the
spans, so the cost is the span's own (an exporter's work runs on the processor's thread).
Tracing through the API alone (no SDK installed, the no-op provider) shows what toolcage
itself adds; beside the settings, the SDK alone is measured doing what a call asks of it
(a bare span, a span like a call's, a counter and a histogram point), which is the floor
of the settings with the SDK.

Last, the redactor alone, which every audit record and every span's reasons pass through
(on the audit writer's thread, and in the call for a span): an ``http_request`` call's
arguments, a refusal's reason (each new one, and one seen before), and a 100 KB argument
cut to the record's 2,048 characters.
"""

from __future__ import annotations

import itertools
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider, Tracer
from toolcage.policies import AuditConfig, Redactor, SecretValues, ToolcageConfig
from toolcage.runtime import Runtime, ToolTelemetry

from .bench_pipeline import noop
from .stats import summarise, us

CALLS = 10_000
ROUNDS = 20
SETTLE = 0.08
"""Seconds between one setting's calls and the next's: longer than the audit writer
lingers and then writes a round's records, so its thread does not run during the next
setting's calls (it still runs during its own, as in production)."""
WARM = 100
"""Calls made before each setting's measured ones, to warm the caches again."""
SDK_SPAN = "for reference, the SDK alone: one span started and ended"
SDK_CALL_SPAN = "the SDK alone: a span as a call's (4 + 3 attributes, 3 events)"
SDK_METRICS = "the SDK alone: a counter and a histogram point, no span current"
REFERENCES = (SDK_SPAN, SDK_CALL_SPAN, SDK_METRICS)


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        del spans
        return SpanExportResult.SUCCESS


async def _measure(root: Path) -> dict[str, list[float]]:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_Discard()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    audited = ToolcageConfig(audit=AuditConfig(path=root / "audit.jsonl"))
    runtimes = {
        "off": Runtime(tools=[noop]),
        "audit log": Runtime(audited, tools=[noop]),
        "tracing, API only (no SDK)": Runtime(
            tools=[noop],
            telemetry=ToolTelemetry(tracer_provider=NoOpTracerProvider(), metrics=False),
        ),
        "tracing": Runtime(
            tools=[noop],
            telemetry=ToolTelemetry(tracer_provider=tracer_provider, metrics=False),
        ),
        "traces and metrics": Runtime(
            tools=[noop],
            telemetry=ToolTelemetry(tracer_provider=tracer_provider, meter_provider=meter_provider),
        ),
    }
    args = {"value": 1}
    samples: dict[str, list[float]] = {name: [] for name in runtimes}
    for name in REFERENCES:
        samples[name] = []
    tracer = tracer_provider.get_tracer("bench")
    meter = meter_provider.get_meter("bench")
    counter, histogram = meter.create_counter("calls"), meter.create_histogram("duration")
    labels = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "noop"}
    clock = time.perf_counter
    try:
        for runtime in runtimes.values():
            for _ in range(500):  # warm caches and the validator
                await runtime.execute("noop", args)
        for _ in range(ROUNDS):
            for name, runtime in runtimes.items():
                times = samples[name]
                await anyio.sleep(SETTLE)  # the last setting's audit writer is done by now
                for _ in range(WARM):  # after the pause, caches are cold again
                    await runtime.execute("noop", args)
                for _ in range(CALLS // ROUNDS):
                    started = clock()
                    result = await runtime.execute("noop", args)
                    times.append(clock() - started)
                    assert not result.is_error, result.envelope()
            for _ in range(CALLS // ROUNDS):
                started = clock()
                tracer.start_span("execute_tool noop").end()
                samples[SDK_SPAN].append(clock() - started)
                started = clock()
                _call_span(tracer)
                samples[SDK_CALL_SPAN].append(clock() - started)
                started = clock()
                counter.add(1, labels)
                histogram.record(1e-5, labels)
                samples[SDK_METRICS].append(clock() - started)
    finally:
        for runtime in runtimes.values():
            await runtime.aclose()
        tracer_provider.shutdown()
        meter_provider.shutdown()
    return samples


def _call_span(tracer: Tracer) -> None:
    """What a call's span asks of the SDK, without toolcage."""
    now = time.time_ns()
    span = tracer.start_span(
        "execute_tool noop",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "noop",
            "gen_ai.tool.call.id": "call_0123456789abcdef",
            "gen_ai.tool.type": "function",
        },
        start_time=now,
    )
    for step in ("approval", "policy_checks", "execute"):
        span.add_event(step, timestamp=now)
    span.set_attributes(
        {
            "gen_ai.agent.id": "default",
            "gen_ai.conversation.id": "default",
            "toolcage.tool.tier": "read_only",
        }
    )
    span.end(end_time=now)


def _redaction() -> list[str]:
    redactor = Redactor(secrets=SecretValues([("api", "bench+credential/0123456789=")]))
    counter = itertools.count()
    arguments = {
        "url": "https://api.example.com/v1/items?page=2&api_key=abc123",
        "method": "POST",
        "headers": {"Authorization": "Bearer abc.def", "Accept": "application/json"},
        "body": json.dumps({"query": "weather in Paris", "limit": 10, "token": "zzz"}),
    }
    reason = "file_read: path '/workspace/notes/{}.md' is outside the mounts"
    big = {"content": "lorem ipsum dolor sit amet " * 4000}

    def fresh_arguments() -> object:
        return redactor.value({**arguments, "url": f"{arguments['url']}{next(counter)}"}, 2048)

    timings = {
        "an http_request call's arguments": _best(fresh_arguments, 2000),
        "a new refusal reason": _best(lambda: redactor.text(reason.format(next(counter))), 2000),
        "a reason seen before": _best(lambda: redactor.text(reason), 20000),
        "a 100 KB argument cut to 2,048 characters": _best(lambda: redactor.value(big, 2048), 50),
    }
    return ["the redactor alone (one secret configured): " + "; ".join(
        f"{name} {us(seconds)}" for name, seconds in timings.items()
    )]  # fmt: skip


def _best(work: Callable[[], object], times: int) -> float:
    """Seconds per call of ``work``: the best of five runs of ``times`` calls."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(times):
            work()
        best = min(best, (time.perf_counter() - started) / times)
    return best


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as root:
        samples = anyio.run(_measure, Path(root))
    medians = {name: summarise(times) for name, times in samples.items()}
    off, _ = medians["off"]
    lines = [f"no-op host tool, {CALLS:,} calls per setting, in {ROUNDS} alternating rounds:"]
    for name, (median, p99) in medians.items():
        added = ""
        if name != "off" and name not in REFERENCES:
            added = f", added {us(median - off)} (target: <= 10 µs)"
        lines.append(f"  {name}: median {us(median)}, p99 {us(p99)}{added}")
    return lines + _redaction()
