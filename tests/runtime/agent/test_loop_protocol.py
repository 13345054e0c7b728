"""The agent loop's protocol details, end to end against a scripted model speaking each
provider's wire format: deferred approval, client-side tools, timeout retries and result
timestamps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from toolcage.runtime import (
    ApprovalRequest,
    CallbackApproval,
    HttpModelClient,
    LoopLimits,
    Rewrite,
    Runtime,
    SafetyTier,
    StopReason,
    ToolCall,
    ToolEvent,
    ToolExecutionContext,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnResult,
    UsageError,
    run_turn,
    tool,
)
from toolcage.runtime.providers import UserMessage

from ..fake_llm import API_KEY, MODEL, PROVIDERS, FakeModel, FakeModelServer, Reply, tool_results

pytestmark = pytest.mark.anyio

VARIANTS = [(p, s) for p in PROVIDERS for s in (False, True)]
IDS = [f"{p}-{'sse' if s else 'json'}" for p, s in VARIANTS]


def call(call_id: str, name: str, **args: Any) -> tuple[str, str, str]:
    return call_id, name, json.dumps(args)


@dataclass
class Host:
    """The host's tools and approver, with what they observed."""

    events: list[ToolEvent] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)
    reads_done: anyio.Event = field(default_factory=anyio.Event)
    answer: bool = True
    attempts: dict[str, int] = field(default_factory=dict)

    def record(self, event: ToolEvent) -> None:
        self.events.append(event)
        ends = [e for e in self.events if isinstance(e, ToolExecutionEnd)]
        if sum(e.call.name == "lookup" for e in ends) == 3:
            self.reads_done.set()

    async def approve(self, request: ApprovalRequest) -> bool:
        """Answers only once the three read-only calls have ended: a loop that waited for
        this answer before running them would never get it."""
        self.asked.append(request)
        await self.reads_done.wait()
        return self.answer

    def tools(self) -> list[Any]:
        @tool(safety_tier=SafetyTier.READ_ONLY)
        def lookup(key: str) -> str:
            """Look a key up."""
            return f"value of {key}"

        @tool(safety_tier=SafetyTier.PRIVILEGED)
        def launch(target: str) -> str:
            """Launch something (needs approval)."""
            return f"launched {target}"

        @tool(safety_tier=SafetyTier.READ_ONLY)
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @tool(client_side=True, safety_tier=SafetyTier.READ_ONLY)
        def pick_file(prompt: str) -> str:
            """Ask the user to pick a file in their browser.

            Args:
                prompt: What to ask.
            """
            raise AssertionError("runs on the host's client")

        @tool(safety_tier=SafetyTier.READ_ONLY, timeout=0.2)
        async def flaky(key: str) -> str:
            """Read a slow source (hangs on the first two attempts)."""
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if self.attempts[key] <= 2 or key == "never":
                await anyio.sleep_forever()
            return f"{key} read on attempt {self.attempts[key]}"

        @tool(timeout=0.2)
        async def slow_write(key: str) -> str:
            """Write to a slow sink (always hangs)."""
            self.attempts[key] = self.attempts.get(key, 0) + 1
            await anyio.sleep_forever()
            return "written"

        return [lookup, launch, add, pick_file, flaky, slow_write]


@dataclass
class Harness:
    host: Host
    model: FakeModel
    runtime: Runtime
    client: HttpModelClient
    slept: list[float] = field(default_factory=list)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)

    async def turn(self, **kwargs: Any) -> TurnResult:
        kwargs.setdefault("sleep", self.sleep)
        messages = kwargs.pop("messages", [UserMessage("Go.")])
        return await run_turn(self.client, self.runtime, messages, **kwargs)

    def results_sent(self, request: int) -> list[dict[str, Any]]:
        return tool_results(self.model.provider, self.model.requests[request].body)


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
            Runtime.from_config(
                None, tools=host.tools(), approval=CallbackApproval(host.approve)
            ) as runtime,
            HttpModelClient.for_provider(
                provider, base_url=base_url, api_key=API_KEY, model=MODEL, stream=stream
            ) as client,
        ):
            runtime.hooks.on_event(host.record)
            yield Harness(host, model, runtime, client)


def position(events: list[ToolEvent], kind: type, name: str) -> list[int]:
    return [i for i, e in enumerate(events) if isinstance(e, kind) and e.call.name == name]


class TestDeferredApproval:
    async def test_calls_without_approval_finish_while_one_waits(self, harness: Harness) -> None:
        harness.model.script = [
            Reply(
                "",
                [
                    call("p", "launch", target="probe"),
                    call("r1", "lookup", key="a"),
                    call("r2", "lookup", key="b"),
                    call("r3", "lookup", key="c"),
                ],
            ),
            Reply("All done."),
        ]
        turn = await harness.turn()
        assert turn.stop is StopReason.COMPLETED
        events = harness.host.events
        read_ends = position(events, ToolExecutionEnd, "lookup")
        (launch_start,) = position(events, ToolExecutionStart, "launch")
        assert len(read_ends) == 3
        assert max(read_ends) < launch_start
        (request,) = harness.host.asked
        assert (request.tool, dict(request.arguments)) == ("launch", {"target": "probe"})
        expected = ["launched probe", "value of a", "value of b", "value of c"]
        assert [o.result.output_text for o in turn.calls] == expected
        assert [s["text"] for s in harness.results_sent(1)] == expected

    async def test_a_refusal_names_the_tier_it_needed(self, harness: Harness) -> None:
        harness.host.answer = False
        reads = [call(f"r{n}", "lookup", key=str(n)) for n in range(3)]
        harness.model.script = [
            Reply("", [call("p", "launch", target="x"), *reads]),
            Reply("Refused."),
        ]
        turn = await harness.turn()
        denied = turn.calls[0].result.error
        assert denied is not None
        assert denied.kind.value == "permission_denied"
        assert denied.details == {"required_tier": "privileged"}
        assert [o.result.is_error for o in turn.calls] == [True, False, False, False]
        assert harness.results_sent(1)[0]["error"]

    @pytest.mark.parametrize("variant", [("openai_chat", False)], ids=["chat"])
    async def test_arguments_a_hook_rewrites_after_approval_are_asked_again(
        self, harness: Harness
    ) -> None:
        def retarget(call: ToolCall, ctx: ToolExecutionContext) -> Rewrite | None:
            return Rewrite({"target": "rocket"}) if call.name == "launch" else None

        harness.runtime.hooks.before_tool_call(retarget)
        reads = [call(f"r{n}", "lookup", key=str(n)) for n in range(3)]
        harness.model.script = [
            Reply("", [call("p", "launch", target="probe"), *reads]),
            Reply("ok"),
        ]
        turn = await harness.turn()
        assert [r.arguments["target"] for r in harness.host.asked] == ["probe", "rocket"]
        assert turn.calls[0].result.output_text == "launched rocket"


class TestClientSideTools:
    async def test_a_pending_call_stops_the_turn_and_its_result_continues_it(
        self, harness: Harness
    ) -> None:
        harness.model.script = [
            Reply("", [call("c1", "add", a=1, b=2), call("c2", "pick_file", prompt="Which?")]),
            Reply("You picked report.pdf."),
        ]
        first = await harness.turn()
        assert first.stop is StopReason.AWAITING_TOOL_RESULTS
        (pending_id,) = first.pending
        added, picked = first.calls
        assert added.result.output_text == "3"
        assert picked.result.envelope()["status"] == "pending"
        assert picked.result.envelope()["call_id"] == pending_id == picked.call.id
        assert len(harness.model.requests) == 1

        with pytest.raises(UsageError, match=f"missing: {pending_id}"):
            await harness.turn(messages=first.messages)
        second = await harness.turn(
            messages=first.messages, tool_results={pending_id: "report.pdf"}
        )
        assert second.stop is StopReason.COMPLETED
        assert second.text == "You picked report.pdf."
        assert [s["text"] for s in harness.results_sent(1)] == ["3", "report.pdf"]

    async def test_execute_answers_with_the_pending_envelope(self, harness: Harness) -> None:
        result = await harness.runtime.execute("pick_file", {"prompt": "Which?"})
        envelope = result.envelope()
        assert envelope["status"] == "pending"
        assert envelope["tool"] == "pick_file"
        assert str(envelope["call_id"]).startswith("call_")
        invalid = await harness.runtime.execute("pick_file", {})
        assert invalid.error is not None
        assert invalid.error.kind.value == "validation_error"


class TestTimeoutRetry:
    @pytest.mark.parametrize(
        "variant", [("openai_chat", False), ("anthropic", True)], ids=["chat", "anthropic"]
    )
    async def test_a_read_only_call_is_retried_with_backoff(self, harness: Harness) -> None:
        harness.model.script = [Reply("", [call("f", "flaky", key="k")]), Reply("ok")]
        turn = await harness.turn(limits=LoopLimits(timeout_retries=2, timeout_backoff=0.5))
        (outcome,) = turn.calls
        assert outcome.result.output_text == "k read on attempt 3"
        assert harness.slept == [0.5, 1.0]
        assert [s["text"] for s in harness.results_sent(1)] == ["k read on attempt 3"]

    @pytest.mark.parametrize("variant", [("openai_chat", False)], ids=["chat"])
    async def test_a_timeout_that_stands_says_how_often_it_was_tried(
        self, harness: Harness
    ) -> None:
        harness.model.script = [
            Reply("", [call("f", "flaky", key="never"), call("w", "slow_write", key="w")]),
            Reply("ok"),
        ]
        turn = await harness.turn(limits=LoopLimits(timeout_retries=1, timeout_backoff=0.25))
        read, write = (o.result.error for o in turn.calls)
        assert read is not None
        assert write is not None
        assert read.kind.value == write.kind.value == "timeout"
        assert read.details is not None
        assert write.details is not None
        assert (read.details["retryable"], read.details["attempts"]) == (True, 2)
        assert read.details["backoff_seconds"] == [0.25]
        assert (write.details["retryable"], write.details["attempts"]) == (False, 1)
        assert harness.host.attempts == {"never": 2, "w": 1}
        assert harness.slept == [0.25]
        assert '"attempts": 2' in harness.results_sent(1)[0]["text"]


class TestTimestamps:
    async def test_each_result_carries_when_it_finished(self, harness: Harness) -> None:
        before = datetime.now(UTC)
        harness.model.script = [
            Reply("", [call("a", "add", a=1, b=2), call("b", "add", a="x", b=1)]),
            Reply("ok"),
        ]
        turn = await harness.turn()
        stamps = [o.finished_at for o in turn.calls]
        for stamp in stamps:
            assert stamp.endswith("Z")
            assert datetime.fromisoformat(stamp) >= before.replace(microsecond=0)
        body = harness.model.requests[1].body
        if harness.model.provider == "gemini":
            parts = body["contents"][-1]["parts"]
            assert [p["functionResponse"]["response"]["finished_at"] for p in parts] == stamps
        else:
            error_text = harness.results_sent(1)[1]["text"]
            if harness.model.provider != "anthropic":  # Anthropic flags errors, sends text
                assert json.loads(error_text)["finished_at"] == stamps[1]
