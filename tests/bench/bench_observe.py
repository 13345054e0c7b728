"""What observing calls costs: the no-op pipeline with the audit log on, with tracing on,
and with traces and metrics on, beside all of them off, measured in alternating rounds of
one run (a machine that gets busier meanwhile shifts every setting alike).

The audit log writes to a file in a temporary directory: its writer thread redacts,
encodes and writes while the calls go on, as in production. Tracing uses the SDK's
``TracerProvider`` with a batch processor whose exporter discards the spans, so the cost
is the span's own (an exporter's work runs on the processor's thread); the SDK's own cost
of one bare span is measured beside it, and tracing through the API alone (no SDK
installed, the no-op provider) shows what toolcage itself adds.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider
from toolcage.policies import AuditConfig, ToolcageConfig
from toolcage.runtime import Runtime, ToolTelemetry

from .bench_pipeline import noop
from .stats import summarise, us

CALLS = 10_000
ROUNDS = 20
SDK_SPAN = "for reference, the SDK alone: one span started and ended"


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
    samples[SDK_SPAN] = []
    tracer = tracer_provider.get_tracer("bench")
    clock = time.perf_counter
    try:
        for runtime in runtimes.values():
            for _ in range(500):  # warm caches and the validator
                await runtime.execute("noop", args)
        for _ in range(ROUNDS):
            for name, runtime in runtimes.items():
                times = samples[name]
                for _ in range(CALLS // ROUNDS):
                    started = clock()
                    result = await runtime.execute("noop", args)
                    times.append(clock() - started)
                    assert not result.is_error, result.envelope()
            for _ in range(CALLS // ROUNDS):
                started = clock()
                tracer.start_span("execute_tool noop").end()
                samples[SDK_SPAN].append(clock() - started)
    finally:
        for runtime in runtimes.values():
            await runtime.aclose()
        tracer_provider.shutdown()
        meter_provider.shutdown()
    return samples


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as root:
        samples = anyio.run(_measure, Path(root))
    medians = {name: summarise(times) for name, times in samples.items()}
    off, _ = medians["off"]
    lines = [f"no-op host tool, {CALLS:,} calls per setting, in {ROUNDS} alternating rounds:"]
    for name, (median, p99) in medians.items():
        added = ""
        if name not in ("off", SDK_SPAN):
            added = f", added {us(median - off)} (target: <= 10 µs)"
        lines.append(f"  {name}: median {us(median)}, p99 {us(p99)}{added}")
    return lines
