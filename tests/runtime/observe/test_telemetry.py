"""OpenTelemetry spans and metrics of tool calls, checked with the SDK's in-memory exporter
and reader, through Runtime.from_config and execute."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from toolcage.policies import ConfigError
from toolcage.runtime import (
    Approval,
    CallbackApproval,
    Runtime,
    ToolCall,
    ToolExecutionContext,
    ToolTelemetry,
)

from .test_audit import HOST_TOOLS, MOUNTS

pytestmark = pytest.mark.anyio


class Collected:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.telemetry = ToolTelemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider
        )

    def spans(self) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith("execute_tool")]

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture
def collected() -> Iterator[Collected]:
    found = Collected()
    yield found
    found.tracer_provider.shutdown()
    found.meter_provider.shutdown()


def config_at(root: Path, text: str = "") -> Path:
    (root / "workspace").mkdir(exist_ok=True)
    path = root / "toolcage.toml"
    path.write_text(MOUNTS + text)
    return path


class TestSpans:
    async def test_a_span_per_call_under_the_callers_span(
        self, tmp_path: Path, collected: Collected
    ) -> None:
        tracer = collected.tracer_provider.get_tracer("host")
        async with Runtime.from_config(
            config_at(tmp_path), tools=HOST_TOOLS, telemetry=collected.telemetry
        ) as runtime:
            with tracer.start_as_current_span("turn") as turn:
                ctx = ToolExecutionContext(session_id="chat-42")
                result = await runtime.execute("echo", {"text": "hi"}, ctx)
            assert not result.is_error
        [span] = collected.spans()
        assert span.name == "execute_tool echo"
        assert span.kind is SpanKind.INTERNAL
        assert span.parent is not None
        assert span.parent.span_id == turn.get_span_context().span_id
        attributes = dict(span.attributes or {})
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["gen_ai.tool.name"] == "echo"
        assert str(attributes["gen_ai.tool.call.id"]).startswith("call_")
        assert attributes["gen_ai.tool.type"] == "function"
        assert attributes["toolcage.tool.tier"] == "read_only"
        assert attributes["gen_ai.agent.id"] == "default"
        assert attributes["gen_ai.conversation.id"] == "chat-42"
        assert not [key for key in attributes if key.endswith(("agent_id", "session_id"))]
        assert "error.type" not in attributes
        assert span.status.status_code is StatusCode.UNSET
        names = [event.name for event in span.events]
        assert names == ["approval", "policy_checks", "execute"]
        assert span.start_time is not None
        assert span.end_time is not None
        times = [event.timestamp for event in span.events]
        assert times == sorted(times)
        assert span.start_time <= times[0]
        assert times[-1] <= span.end_time

    async def test_a_refusal_is_an_error_span_with_its_decision(
        self, tmp_path: Path, collected: Collected
    ) -> None:
        async with Runtime.from_config(
            config_at(tmp_path),
            tools=HOST_TOOLS,
            telemetry=collected.telemetry,
            approval=CallbackApproval(lambda request: Approval.DENY),
        ) as runtime:
            await runtime.execute("launch", {"target": "x"})
            await runtime.execute("file_read", {"path": "/etc/passwd"})
        launch, read = collected.spans()
        for span in (launch, read):
            assert span.status.status_code is StatusCode.ERROR
            assert dict(span.attributes or {})["error.type"] == "permission_denied"
        assert launch.attributes is not None
        assert read.attributes is not None
        assert launch.attributes["toolcage.approval.allowed"] is False
        assert launch.attributes["toolcage.approval.reason"] == (
            "The user did not approve this call of launch"
        )
        assert [event.name for event in launch.events][-1] == "approval"
        assert read.attributes["toolcage.path.allowed"] is False
        assert "outside the mounts" in str(read.attributes["toolcage.path.reason"])

    async def test_spans_of_nested_work_are_children_of_the_call(
        self, tmp_path: Path, collected: Collected
    ) -> None:
        from toolcage.runtime import SafetyTier, tool

        tracer = collected.tracer_provider.get_tracer("tool")

        @tool(safety_tier=SafetyTier.READ_ONLY)
        async def traced() -> str:
            """Trace some work."""
            with tracer.start_as_current_span("inner work"):
                return "ok"

        async with Runtime.from_config(
            config_at(tmp_path), tools=[traced], telemetry=collected.telemetry
        ) as runtime:
            await runtime.execute("traced", {})
        inner = next(s for s in collected.exporter.get_finished_spans() if s.name == "inner work")
        [call] = collected.spans()
        assert inner.parent is not None
        assert call.context is not None
        assert inner.parent.span_id == call.context.span_id


class TestSampling:
    async def test_a_dropped_span_still_parents_the_tools_work_and_the_call_is_counted(
        self, tmp_path: Path, collected: Collected
    ) -> None:
        from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
        from toolcage.runtime import SafetyTier, tool

        dropping = TracerProvider(sampler=ALWAYS_OFF)
        seen: list[int] = []

        @tool(safety_tier=SafetyTier.READ_ONLY)
        async def traced() -> str:
            """Look at the current span."""
            from opentelemetry import trace

            seen.append(trace.get_current_span().get_span_context().span_id)
            return "ok"

        telemetry = ToolTelemetry(tracer_provider=dropping, meter_provider=collected.meter_provider)
        async with Runtime.from_config(
            config_at(tmp_path), tools=[traced], telemetry=telemetry
        ) as runtime:
            assert not (await runtime.execute("traced", {})).is_error
        dropping.shutdown()
        assert seen[0] != 0  # the dropped span is current: what the tool traces is dropped too
        [count] = collected.points("toolcage.tool.calls")
        assert count.value == 1


class FailingTelemetry(ToolTelemetry):
    def call_ended(self, trace_: Any) -> None:
        raise RuntimeError("exporter gone")


class TestFailingObserver:
    async def test_the_call_goes_on_and_the_failure_is_logged_as_an_event(
        self, tmp_path: Path, collected: Collected, caplog: pytest.LogCaptureFixture
    ) -> None:
        telemetry = FailingTelemetry(
            tracer_provider=collected.tracer_provider, meter_provider=collected.meter_provider
        )
        caplog.set_level(logging.ERROR, logger="toolcage")
        async with Runtime.from_config(
            config_at(tmp_path), tools=HOST_TOOLS, telemetry=telemetry
        ) as runtime:
            call = ToolCall("echo", {"text": "hi"}, "call_observed")
            result = await runtime.execute_call(call, ToolExecutionContext())
        assert not result.is_error
        [failed] = [r for r in caplog.records if getattr(r, "event", None) == "observer.failed"]
        assert failed.levelno == logging.ERROR
        assert (getattr(failed, "stage", None), getattr(failed, "tool", None)) == ("end", "echo")
        assert getattr(failed, "call_id", None) == "call_observed"


class TestMetrics:
    async def test_calls_and_durations_per_tool_and_outcome(
        self, tmp_path: Path, collected: Collected
    ) -> None:
        async with Runtime.from_config(
            config_at(tmp_path), tools=HOST_TOOLS, telemetry=collected.telemetry
        ) as runtime:
            for _ in range(3):
                await runtime.execute("echo", {"text": "hi"})
            await runtime.execute("broken", {})
            await runtime.execute("made_up_by_a_model", {})
        counts = {
            (p.attributes["gen_ai.tool.name"], p.attributes["toolcage.outcome"]): p.value
            for p in collected.points("toolcage.tool.calls")
        }
        assert counts == {
            ("echo", "success"): 3,
            ("broken", "execution_error"): 1,
            ("unknown", "not_found"): 1,
        }
        durations = {
            p.attributes["gen_ai.tool.name"]: p for p in collected.points("toolcage.tool.duration")
        }
        assert durations["echo"].count == 3
        assert durations["echo"].sum > 0
        assert durations["broken"].attributes["error.type"] == "execution_error"


class TestConfig:
    async def test_config_turns_telemetry_on_with_the_global_providers(
        self, tmp_path: Path
    ) -> None:
        config = config_at(tmp_path, "[telemetry]\ntraces = true\nmetrics = true\n")
        async with Runtime.from_config(config, tools=HOST_TOOLS) as runtime:
            observation = runtime.pipeline.observation
            assert observation is not None
            assert [type(o).__name__ for o in observation.observers] == ["ToolTelemetry"]
            assert not (await runtime.execute("echo", {"text": "hi"})).is_error

    async def test_without_the_package_asking_for_it_is_a_config_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for name in ("opentelemetry.trace", "opentelemetry.metrics"):
            monkeypatch.setitem(sys.modules, name, None)
        config = config_at(tmp_path, "[telemetry]\ntraces = true\n")
        with pytest.raises(
            ConfigError, match=r"telemetry: traces and metrics need the opentelemetry-api package"
        ):
            Runtime.from_config(config)

    async def test_off_by_default(self, tmp_path: Path) -> None:
        async with Runtime.from_config(config_at(tmp_path), tools=HOST_TOOLS) as runtime:
            assert runtime.pipeline.observation is None
