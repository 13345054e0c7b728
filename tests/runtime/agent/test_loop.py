"""The agent loop end to end: real Runtime, real host tools, a scripted model behind a real
HTTP server speaking each provider's wire format, whole and streamed."""

from __future__ import annotations

import base64
import json
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from toolcage.policies import load_config
from toolcage.runtime import (
    Block,
    HttpModelClient,
    ImageContent,
    LoopLimits,
    ModelAPIError,
    Runtime,
    SafetyTier,
    StopReason,
    TextContent,
    ToolCall,
    ToolEvent,
    ToolExecutionContext,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolResult,
    TurnResult,
    run_turn,
    tool,
)
from toolcage.runtime.providers import ToolResultsMessage, UserMessage

from ..fake_llm import API_KEY, MODEL, PROVIDERS, FakeModel, FakeModelServer, Reply, tool_results

PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
VARIANTS = [(p, s) for p in PROVIDERS for s in (False, True)]
IDS = [f"{p}-{'sse' if s else 'json'}" for p, s in VARIANTS]


@dataclass
class Host:
    """The host's tools, with what they observed."""

    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    hang_started: anyio.Event = field(default_factory=anyio.Event)
    events: list[ToolEvent] = field(default_factory=list)

    def tools(self) -> list[Any]:
        @tool(safety_tier=SafetyTier.READ_ONLY)
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @tool(safety_tier=SafetyTier.READ_ONLY)
        async def lookup(key: str) -> str:
            """Look a key up (slowly)."""
            start = time.monotonic()
            await anyio.sleep(0.3)
            self.intervals[key] = (start, time.monotonic())
            return f"value of {key}"

        @tool
        async def write_note(text: str) -> str:
            """Write a note."""
            start = time.monotonic()
            await anyio.sleep(0.05)
            self.notes.append(text)
            self.intervals["note:" + text] = (start, time.monotonic())
            return "written"

        @tool
        def step(n: int) -> str:
            """Take step n."""
            self.steps.append(n)
            return f"step {n} done"

        @tool
        async def hang() -> str:
            """Wait for a long time."""
            self.hang_started.set()
            await anyio.sleep(60)
            return "finished"

        @tool(safety_tier=SafetyTier.READ_ONLY)
        def snapshot() -> ToolResult:
            """Take a picture."""
            return ToolResult(content=(TextContent("a red pixel"), ImageContent(PIXEL)))

        return [add, lookup, write_note, step, hang, snapshot]


def call(call_id: str, name: str, **args: Any) -> tuple[str, str, str]:
    return call_id, name, json.dumps(args)


@dataclass
class Harness:
    host: Host
    model: FakeModel
    runtime: Runtime
    client: HttpModelClient

    async def turn(self, **kwargs: Any) -> TurnResult:
        return await run(self, **kwargs)

    def results_sent(self, request: int) -> list[dict[str, Any]]:
        return tool_results(self.model.provider, self.model.requests[request].body)


async def run(h: Harness, **kwargs: Any) -> TurnResult:
    return await run_turn(h.client, h.runtime, [UserMessage("Go.")], **kwargs)


@pytest.fixture(params=VARIANTS, ids=IDS)
def variant(request: pytest.FixtureRequest) -> tuple[str, bool]:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
async def harness(variant: tuple[str, bool]) -> AsyncIterator[Harness]:
    provider, stream = variant
    host = Host()
    model = FakeModel(provider, stream, [])
    with FakeModelServer(model) as base_url:
        async with (
            Runtime(tools=host.tools()) as runtime,
            HttpModelClient.for_provider(
                provider, base_url=base_url, api_key=API_KEY, model=MODEL, stream=stream
            ) as client,
        ):
            runtime.hooks.on_event(host.events.append)
            yield Harness(host, model, runtime, client)


pytestmark = pytest.mark.anyio


class TestSeveralCallsInOneResponse:
    async def test_results_go_back_in_call_order_with_their_ids(self, harness: Harness) -> None:
        harness.model.script = [
            Reply(
                "Working on it.",
                [
                    call("call_1", "add", a=1, b=2),
                    call("call_2", "write_note", text="hello"),
                    call("call_3", "add", a=3, b=4),
                ],
            ),
            Reply("All done."),
        ]
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        assert turn.text == "All done."
        assert turn.rounds == 2
        assert [o.result.output_text for o in turn.calls] == ["3", "written", "7"]
        assert harness.host.notes == ["hello"]
        sent = harness.results_sent(1)
        assert [s["text"] for s in sent] == ["3", "written", "7"]
        if harness.model.provider == "gemini":
            assert [s["id"] for s in sent] == ["add", "write_note", "add"]  # Gemini: no ids
        else:
            assert [s["id"] for s in sent] == ["call_1", "call_2", "call_3"]
        starts = [e for e in harness.host.events if isinstance(e, ToolExecutionStart)]
        ends = [e for e in harness.host.events if isinstance(e, ToolExecutionEnd)]
        assert len(starts) == len(ends) == 3
        assert turn.usage.input_tokens == 101 + 102
        assert turn.usage.output_tokens == 14
        assert len(turn.round_usage) == 2


class TestImages:
    async def test_an_image_result_reaches_the_model(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call("s", "snapshot")]), Reply("I see red.")]
        turn = await harness.turn()
        assert turn.text == "I see red."
        sent = json.dumps(harness.model.requests[1].body)
        assert base64.b64encode(PIXEL).decode() in sent
        assert "a red pixel" in sent


class TestLongChains:
    async def test_twelve_rounds_each_seeing_the_previous_result(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call(f"c{n}", "step", n=n)]) for n in range(12)]
        harness.model.script.append(Reply("Twelve steps taken."))
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        assert turn.rounds == 13
        assert harness.host.steps == list(range(12))
        for n in range(1, 13):
            assert [s["text"] for s in harness.results_sent(n)] == [f"step {n - 1} done"]
        assert len(turn.round_usage) == 13
        assert all(u is not None for u in turn.round_usage)

    async def test_round_budget_stops_the_turn(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call(f"c{n}", "step", n=n)]) for n in range(10)]
        turn = await harness.turn(limits=LoopLimits(max_rounds=3))
        assert turn.stop is StopReason.MAX_ROUNDS
        assert harness.host.steps == [0, 1, 2]
        assert isinstance(turn.messages[-1], ToolResultsMessage)

    async def test_the_operators_loop_section_sets_the_budget(
        self, harness: Harness, tmp_path: Path
    ) -> None:
        (tmp_path / "toolcage.toml").write_text("[loop]\nmax_rounds = 2\n")
        harness.model.script = [Reply("", [call(f"c{n}", "step", n=n)]) for n in range(10)]
        config = load_config(tmp_path / "toolcage.toml")
        async with Runtime(config, tools=harness.host.tools()) as runtime:
            turn = await run_turn(harness.client, runtime, [UserMessage("Go.")])
        assert turn.stop is StopReason.MAX_ROUNDS
        assert harness.host.steps == [0, 1]

    async def test_token_budget_stops_the_turn(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call(f"c{n}", "step", n=n)]) for n in range(10)]
        turn = await harness.turn(limits=LoopLimits(max_total_tokens=200))
        assert turn.stop is StopReason.TOKEN_BUDGET
        assert turn.rounds == 2  # 108 tokens after one round, 217 after two
        assert turn.usage.total_tokens == 217

    async def test_cost_budget_stops_the_turn(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call(f"c{n}", "step", n=n)]) for n in range(10)]
        limits = LoopLimits(max_cost=0.5, input_price=1000.0, output_price=10_000.0)
        turn = await harness.turn(limits=limits)
        # round 1: 101 in (0.101) + 7 out (0.07) = 0.171; round 2: 0.172; round 3: 0.173
        assert turn.stop is StopReason.COST_BUDGET
        assert turn.rounds == 3
        assert turn.cost == pytest.approx(0.516)


class TestHooks:
    async def test_hooks_apply_to_the_calls_of_the_loop(self, harness: Harness) -> None:
        def no_notes(call: ToolCall, ctx: ToolExecutionContext) -> Block | None:
            return Block("notes are closed") if call.name == "write_note" else None

        harness.runtime.hooks.before_tool_call(no_notes)
        harness.model.script = [
            Reply("", [call("n", "write_note", text="x"), call("a", "add", a=2, b=2)]),
            Reply("ok"),
        ]
        turn = await harness.turn()
        blocked, added = turn.calls
        assert blocked.result.error is not None
        assert blocked.result.error.kind.value == "blocked"
        assert added.result.output_text == "4"
        assert harness.host.notes == []
        sent = harness.results_sent(1)
        assert sent[0]["error"]
        assert "notes are closed" in sent[0]["text"]

    async def test_a_persist_hook_redacts_what_the_model_sees(self, harness: Harness) -> None:
        seen_after: list[str] = []

        def redact(call: ToolCall, ctx: ToolExecutionContext, result: ToolResult) -> ToolResult:
            return ToolResult.text(result.output_text.replace("42", "[redacted]"))

        harness.runtime.hooks.after_tool_call(lambda c, x, r: seen_after.append(r.output_text))
        harness.runtime.hooks.tool_result_persist(redact)
        harness.model.script = [Reply("", [call("a", "add", a=40, b=2)]), Reply("ok")]
        await harness.turn()
        assert seen_after == ["42"]
        assert [s["text"] for s in harness.results_sent(1)] == ["[redacted]"]


class TestParallelReadOnly:
    async def test_read_only_calls_overlap_and_writes_run_alone(self, harness: Harness) -> None:
        harness.model.script = [
            Reply(
                "",
                [
                    call("l1", "lookup", key="a"),
                    call("l2", "lookup", key="b"),
                    call("l3", "lookup", key="c"),
                    call("w1", "write_note", text="between"),
                    call("l4", "lookup", key="d"),
                ],
            ),
            Reply("ok"),
        ]
        turn = await harness.turn()
        spans = harness.host.intervals
        first = [spans[k] for k in "abc"]
        assert max(s for s, _ in first) < min(e for _, e in first)  # all three overlapped
        note = spans["note:between"]
        assert note[0] >= max(e for _, e in first)
        assert spans["d"][0] >= note[1]
        assert [o.result.output_text for o in turn.calls] == [
            "value of a",
            "value of b",
            "value of c",
            "written",
            "value of d",
        ]


class TestValidationRetry:
    async def test_a_malformed_call_is_corrected_on_retry(self, harness: Harness) -> None:
        harness.model.script = [
            Reply("", [call("bad", "add", a="three", b=2)]),
            Reply("", [call("good", "add", a=3, b=2)]),
            Reply("Five."),
        ]
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        assert turn.error is None
        failed, fixed = turn.calls
        assert failed.result.error is not None
        assert failed.result.error.field == "a"
        assert fixed.result.output_text == "5"
        (feedback,) = harness.results_sent(1)
        assert feedback["error"]
        assert "failing field is 'a'" in feedback["text"]
        assert """Its schema: {"type": "integer"}.""" in feedback["text"].replace('\\"', '"')
        assert '"required": ["a", "b"]' in feedback["text"].replace('\\"', '"')
        assert "2 retries left" in feedback["text"]

    @pytest.mark.parametrize(
        "variant",
        [
            ("openai_chat", False),
            ("openai_chat", True),
            ("openai_responses", True),
            ("anthropic", True),
        ],
        ids=["openai_chat-json", "openai_chat-sse", "openai_responses-sse", "anthropic-sse"],
    )  # fmt: skip  (the wire formats that can carry arguments that are not valid JSON)
    async def test_arguments_that_are_not_json_are_corrected_on_retry(
        self, harness: Harness
    ) -> None:
        harness.model.script = [
            Reply("", [("broken", "add", '{"a": 3, "b": ')]),
            Reply("", [call("fixed", "add", a=3, b=4)]),
            Reply("Seven."),
        ]
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        assert [o.result.is_error for o in turn.calls] == [True, False]
        (feedback,) = harness.results_sent(1)
        assert feedback["error"]
        assert "not valid JSON" in feedback["text"]
        assert turn.calls[1].result.output_text == "7"

    async def test_the_error_surfaces_after_two_failed_retries(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call(f"b{n}", "add", a="x", b=1)]) for n in range(5)]
        turn = await harness.turn()
        assert turn.stop is StopReason.VALIDATION_FAILED
        assert turn.rounds == 3
        assert turn.error is not None
        assert turn.error.field == "a"
        assert "1 retry left" in harness.results_sent(2)[0]["text"]

    async def test_the_retry_count_is_configurable(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call(f"b{n}", "add", a="x", b=1)]) for n in range(5)]
        turn = await harness.turn(limits=LoopLimits(max_validation_retries=0))
        assert turn.stop is StopReason.VALIDATION_FAILED
        assert turn.rounds == 1


class TestAbort:
    async def test_abort_in_the_middle_of_a_tool_ends_the_turn_cleanly(
        self, harness: Harness
    ) -> None:
        harness.model.script = [
            Reply("", [call("h", "hang"), call("after", "add", a=1, b=1)]),
            Reply("never reached"),
        ]
        abort = anyio.Event()
        turns: list[TurnResult] = []

        async def host_turn() -> None:
            turns.append(await harness.turn(abort=abort))

        started = time.monotonic()
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(host_turn)
                await harness.host.hang_started.wait()
                abort.set()
        (turn,) = turns
        assert time.monotonic() - started < 5
        assert turn.stop is StopReason.ABORTED
        assert len(harness.model.requests) == 1
        kinds = [o.result.error.kind.value if o.result.error else None for o in turn.calls]
        assert kinds == ["cancelled", "cancelled"]
        last = turn.messages[-1]
        assert isinstance(last, ToolResultsMessage)
        assert [o.call.name for o in last.outcomes] == ["hang", "add"]
        ends = [e for e in harness.host.events if isinstance(e, ToolExecutionEnd)]
        assert [e.result.error.kind.value for e in ends if e.result.error] == ["cancelled"]

    async def test_abort_while_the_model_is_answering(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call("a", "add", a=1, b=1)], stall=3.0)]
        abort = anyio.Event()
        turns: list[TurnResult] = []

        async def host_turn() -> None:
            turns.append(await harness.turn(abort=abort))

        started = time.monotonic()
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(host_turn)
                await anyio.to_thread.run_sync(harness.model.requested.wait)
                abort.set()
        (turn,) = turns
        assert time.monotonic() - started < 2.5
        assert turn.stop is StopReason.ABORTED
        assert turn.rounds == 0
        assert turn.calls == []
        assert len(turn.messages) == 1  # the conversation is as it was


class TestModelErrors:
    async def test_a_refused_request_is_a_model_api_error(self, harness: Harness) -> None:
        provider = harness.model.provider
        async with HttpModelClient.for_provider(
            provider,
            base_url=harness.model.base_url,
            api_key="wrong",
            model=MODEL,
            stream=harness.model.stream,
        ) as client:
            with pytest.raises(ModelAPIError, match="HTTP 401") as caught:
                await run_turn(client, harness.runtime, [UserMessage("Go.")])
        assert caught.value.status == 401
        assert harness.model.requests == []

    async def test_a_rate_limit_is_retried_after_the_servers_delay(self, harness: Harness) -> None:
        harness.model.script = [
            Reply(status=429, retry_after="0.2"),
            Reply(status=503),
            Reply("hi"),
        ]
        harness.client.backoff = 0.05
        started = time.monotonic()
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        assert len(harness.model.requests) == 3
        assert time.monotonic() - started >= 0.25  # 0.2 s as asked, then 0.05 s of backoff

    async def test_retries_end_with_the_last_error(self, harness: Harness) -> None:
        harness.model.script = [Reply(status=503)] * 5
        harness.client.backoff = 0.01
        with pytest.raises(ModelAPIError, match="HTTP 503") as caught:
            await harness.turn()
        assert caught.value.status == 503
        assert len(harness.model.requests) == 1 + harness.client.retries

    async def test_a_client_error_is_not_retried(self, harness: Harness) -> None:
        harness.model.script = [Reply(status=400), Reply("hi")]
        with pytest.raises(ModelAPIError, match="HTTP 400"):
            await harness.turn()
        assert len(harness.model.requests) == 1

    async def test_a_retry_after_beyond_the_cap_fails_at_once(self, harness: Harness) -> None:
        harness.model.script = [Reply(status=429, retry_after="3600"), Reply("hi")]
        with pytest.raises(ModelAPIError, match="HTTP 429") as caught:
            await harness.turn()
        assert caught.value.retry_after == 3600
        assert len(harness.model.requests) == 1

    async def test_an_endpoint_that_refuses_connections_is_retried_then_fails(self) -> None:
        with socket.socket() as probe:  # a port that nothing listens on
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        async with (
            Runtime.from_config(None) as runtime,
            HttpModelClient.for_provider(
                "openai_chat",
                base_url=f"http://127.0.0.1:{port}/v1",
                api_key="k",
                model="m",
                retries=2,
                backoff=0.01,
            ) as client,
        ):
            with pytest.raises(ModelAPIError, match="ConnectError") as caught:
                await run_turn(client, runtime, [UserMessage("Go.")])
        assert caught.value.retryable

    def test_an_unknown_provider_is_refused_by_name(self) -> None:
        with pytest.raises(ValueError, match="unknown provider 'openai'; known: anthropic"):
            HttpModelClient.for_provider("openai", base_url="http://x", api_key="k", model="m")


class TestResponsesReasoning:
    @pytest.mark.parametrize(
        "variant", [("openai_responses", False), ("openai_responses", True)], ids=["json", "sse"]
    )
    async def test_reasoning_items_go_back_before_their_calls_with_their_ids(
        self, harness: Harness
    ) -> None:
        harness.model.script = [
            Reply("", [call("call_1", "add", a=1, b=2)], reasoning="first think"),
            Reply("", [call("call_2", "add", a=3, b=4)], reasoning="second think"),
            Reply("Done."),
        ]
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        second, third = (harness.model.requests[n].body["input"] for n in (1, 2))
        first_round = [
            {
                "type": "reasoning",
                "id": "rs_first",
                "summary": [{"type": "summary_text", "text": "first think"}],
                "encrypted_content": "enc:first think",
            },
            {
                "type": "function_call",
                "id": "fc_call_1",
                "call_id": "call_1",
                "name": "add",
                "arguments": '{"a": 1, "b": 2}',
            },
        ]
        assert second[1:3] == first_round
        assert second[3]["type"] == "function_call_output"
        assert third[1:3] == first_round  # earlier rounds keep their reasoning too
        assert [item.get("id") for item in third[4:6]] == ["rs_second", "fc_call_2"]
