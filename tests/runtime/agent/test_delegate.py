"""``delegate_to_agent``: a nested turn of another ``[agents.*]`` profile on its own model,
through ``Runtime.from_config(models=...)`` and ``run_turn``, against scripted models
behind real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from toolcage.host_bindings import ChannelMessage
from toolcage.runtime import (
    ApprovalRequest,
    Artifact,
    ArtifactAction,
    CallbackApproval,
    HttpModelClient,
    Runtime,
    SafetyTier,
    StopReason,
    ToolExecutionContext,
    ToolResult,
    TurnResult,
    UserMessage,
    run_turn,
    tool,
)

from ..fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply

pytestmark = pytest.mark.anyio

CONFIG = """
[agents.lead]
tools = ["delegate_to_agent", "file_read"]
model = "main"

[agents.researcher]
tools = ["file_read", "send_media", "delegate_to_agent", "launch"]
model = "research"
system_prompt = "You research facts in the workspace."
description = "finds facts in files"

[agents.writer]
tools = ["file_read"]
model = "research"

[delegation]
max_turns = 3
"""
CTX = ToolExecutionContext(user_id="ada", session_id="s1", agent_id="lead", channel_id="chat-7")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


def call(call_id: str, name: str, **args: Any) -> tuple[str, str, str]:
    return call_id, name, json.dumps(args)


def delegate(agent: str, goal: str, call_id: str = "d1") -> Reply:
    return Reply(calls=[call(call_id, "delegate_to_agent", agent=agent, goal=goal)])


@tool(safety_tier=SafetyTier.PRIVILEGED)
async def launch(target: str) -> str:
    """Launch something that needs approval.

    Args:
        target: What to launch.
    """
    return f"launched {target}"


@dataclass
class Recorder:
    sent: list[ChannelMessage] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def send(self, message: ChannelMessage) -> None:
        self.sent.append(message)

    def approve(self, request: ApprovalRequest) -> bool:
        self.asked.append(request)
        return request.arguments.get("target") != "rocket"


@dataclass
class Team:
    lead: FakeModel
    research: FakeModel
    runtime: Runtime
    client: HttpModelClient
    recorder: Recorder
    workspace: Path

    async def turn(self, goal: str = "Go.") -> TurnResult:
        return await run_turn(self.client, self.runtime, [UserMessage(goal)], context=CTX)

    def answer_of(self, turn: TurnResult, index: int = 0) -> dict[str, Any]:
        return json.loads(self.result_of(turn, index).output_text)  # type: ignore[no-any-return]

    def result_of(self, turn: TurnResult, index: int = 0) -> ToolResult:
        outcome = [o for o in turn.calls if o.call.name == "delegate_to_agent"][index]
        assert not outcome.result.is_error, outcome.result.output_text
        return outcome.result


@contextmanager
def servers(*models: FakeModel) -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [stack.enter_context(FakeModelServer(m)) for m in models]


def client_for(base_url: str) -> HttpModelClient:
    return HttpModelClient.for_provider(
        "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
    )


@asynccontextmanager
async def team_in(root: Path, text: str = CONFIG) -> AsyncIterator[Team]:
    (root / "workspace").mkdir(exist_ok=True)
    (root / "toolcage.toml").write_text(text)
    lead, research = FakeModel("openai_chat", False, []), FakeModel("openai_chat", False, [])
    recorder = Recorder()
    with servers(lead, research) as (lead_url, research_url):
        async with AsyncExitStack() as stack:
            lead_client = await stack.enter_async_context(client_for(lead_url))
            research_client = await stack.enter_async_context(client_for(research_url))
            runtime = Runtime.from_config(
                root / "toolcage.toml",
                tools=[launch],
                channel=recorder,
                approval=CallbackApproval(recorder.approve),
                models={"main": lead_client, "research": research_client},
            )
            await stack.enter_async_context(runtime)
            yield Team(lead, research, runtime, lead_client, recorder, root / "workspace")


@pytest.fixture
async def team(tmp_path: Path) -> AsyncIterator[Team]:
    async with team_in(tmp_path) as made:
        yield made


def tool_names(model: FakeModel, request: int = 0) -> list[str]:
    return sorted(t["function"]["name"] for t in model.requests[request].body.get("tools", []))


def messages(model: FakeModel, request: int) -> list[dict[str, Any]]:
    return model.requests[request].body["messages"]  # type: ignore[no-any-return]


class TestRoundTrip:
    async def test_the_delegate_answers_with_its_own_model_prompt_and_tools(
        self, team: Team
    ) -> None:
        (team.workspace / "facts.txt").write_text("The answer is 42.\n")
        team.lead.script = [delegate("researcher", "Find the answer in facts.txt."), Reply("42.")]
        team.research.script = [
            Reply(calls=[call("r1", "file_read", path="facts.txt")]),
            Reply("The answer is 42."),
        ]
        turn = await team.turn()
        assert turn.stop is StopReason.COMPLETED
        assert turn.text == "42."
        answer = team.answer_of(turn)
        assert answer == {
            "agent": "researcher",
            "answer": "The answer is 42.",
            "stop": "completed",
            "rounds": 2,
            "cost": 0.0,
            "media": [],
        }
        first = messages(team.research, 0)
        assert first[0] == {"role": "system", "content": "You research facts in the workspace."}
        assert first[-1]["content"] == "Find the answer in facts.txt."
        assert "Go." not in json.dumps(first)  # the delegate does not see the conversation
        assert tool_names(team.research) == [
            "delegate_to_agent",
            "file_read",
            "launch",
            "send_media",
        ]
        assert tool_names(team.lead) == ["delegate_to_agent", "file_read"]

    async def test_the_declaration_lists_the_agents(self, team: Team) -> None:
        decl = team.runtime.registry.get("delegate_to_agent", "lead").schema()
        assert "researcher: finds facts in files" in decl.description
        assert decl.parameters["properties"]["agent"]["enum"] == ["lead", "researcher", "writer"]

    async def test_media_the_delegate_sent_reached_the_callers_channel(self, team: Team) -> None:
        (team.workspace / "chart.png").write_bytes(PNG)
        team.lead.script = [delegate("researcher", "Send the chart."), Reply("Sent.")]
        team.research.script = [
            Reply(calls=[call("r1", "send_media", path="chart.png")]),
            Reply("I sent chart.png."),
        ]
        answer = team.answer_of(await team.turn())
        assert answer["media"] == [
            {
                "sent": "chart.png",
                "mime_type": "image/png",
                "bytes": len(PNG),
                "channel_id": "chat-7",
            }
        ]
        [message] = team.recorder.sent
        assert (message.user_id, message.channel_id) == ("ada", "chat-7")
        assert message.attachments[0].data == PNG

    async def test_privileged_calls_of_the_delegate_go_to_the_approval_policy(
        self, team: Team
    ) -> None:
        team.lead.script = [delegate("researcher", "Launch the probe and the rocket."), Reply("ok")]
        team.research.script = [
            Reply(
                calls=[call("r1", "launch", target="probe"), call("r2", "launch", target="rocket")]
            ),
            Reply("Probe launched; rocket refused."),
        ]
        answer = team.answer_of(await team.turn())
        assert answer["answer"] == "Probe launched; rocket refused."
        assert [r.arguments["target"] for r in team.recorder.asked] == ["probe", "rocket"]
        assert {r.context.agent_id for r in team.recorder.asked} == {"researcher"}
        assert {r.context.user_id for r in team.recorder.asked} == {"ada"}
        assert {r.context.session_id for r in team.recorder.asked} == {"s1/researcher"}
        results = [m for m in messages(team.research, 1) if m["role"] == "tool"]
        assert "launched probe" in results[0]["content"]
        assert "permission_denied" in results[1]["content"]


class TestResultForTwoAudiences:
    async def test_details_display_and_the_artifacts_of_the_successful_calls(
        self, team: Team
    ) -> None:
        (team.workspace / "chart.png").write_bytes(PNG)
        team.lead.script = [delegate("researcher", "Send the charts."), Reply("Sent.")]
        team.research.script = [
            Reply(
                calls=[
                    call("r1", "send_media", path="chart.png"),
                    call("r2", "send_media", path="missing.png"),
                ]
            ),
            Reply("I sent chart.png."),
        ]
        result = team.result_of(await team.turn())
        assert result.details == {
            "agent": "researcher",
            "stop": "completed",
            "rounds": 2,
            "calls": 2,
            "failed_calls": 1,
            "cost": 0.0,
            "input_tokens": 101 + 102,  # the scripted model's usage of its rounds 1 and 2
            "output_tokens": 7 + 7,
        }
        assert result.display == "Delegated to researcher: completed after 2 rounds (2 calls)"
        assert result.artifacts == (Artifact("media", "chart.png", ArtifactAction.SENT),)

    async def test_a_turn_cut_by_its_budget_says_so(self, team: Team) -> None:
        team.lead.script = [delegate("researcher", "Read forever."), Reply("gave up")]
        team.research.script = [
            Reply(calls=[call(f"r{i}", "file_read", path="none.txt")]) for i in range(10)
        ]
        result = team.result_of(await team.turn())
        assert result.details is not None
        assert (result.details["stop"], result.details["failed_calls"]) == ("max_rounds", 3)
        assert result.display == "Delegated to researcher: max_rounds after 3 rounds (3 calls)"
        assert result.artifacts == ()


class TestBudgetsAndLoops:
    async def test_the_delegated_turn_stops_at_the_operators_max_turns(self, team: Team) -> None:
        team.lead.script = [delegate("researcher", "Read forever."), Reply("gave up")]
        team.research.script = [
            Reply(calls=[call(f"r{i}", "file_read", path="none.txt")]) for i in range(10)
        ]
        answer = team.answer_of(await team.turn())
        assert (answer["stop"], answer["rounds"]) == ("max_rounds", 3)
        assert len(team.research.requests) == 3

    async def test_a_delegate_cannot_delegate_past_the_depth_limit(self, team: Team) -> None:
        team.lead.script = [delegate("researcher", "Ask the writer."), Reply("done")]
        team.research.script = [delegate("writer", "Write it.", "r1"), Reply("I could not.")]
        answer = team.answer_of(await team.turn())
        assert answer["answer"] == "I could not."
        [refused] = [m for m in messages(team.research, 1) if m["role"] == "tool"]
        assert "permission_denied" in refused["content"]
        assert "max_depth" in refused["content"]
        assert len(team.research.requests) == 2  # the writer never ran

    async def test_a_deeper_limit_lets_the_delegate_delegate(self, tmp_path: Path) -> None:
        text = CONFIG.replace("max_turns = 3", "max_turns = 3\nmax_depth = 2")
        async with team_in(tmp_path, text) as team:
            team.lead.script = [delegate("researcher", "Ask the writer."), Reply("done")]
            # researcher and writer share the "research" model: its script serves both.
            team.research.script = [
                delegate("writer", "Write it.", "r1"),
                Reply("Written."),
                Reply("The writer wrote it."),
            ]
            answer = team.answer_of(await team.turn())
            assert answer["answer"] == "The writer wrote it."
            assert messages(team.research, 1)[-1]["content"] == "Write it."

    async def test_the_depth_travels_in_the_context(self, team: Team) -> None:
        deep = ToolExecutionContext(user_id="ada", agent_id="lead", delegation_depth=1)
        result = await team.runtime.execute(
            "delegate_to_agent", {"agent": "researcher", "goal": "x"}, deep
        )
        assert result.error is not None
        assert result.error.kind.value == "permission_denied"
        assert team.research.requests == []

    async def test_an_agent_cannot_delegate_to_itself(self, team: Team) -> None:
        result = await team.runtime.execute(
            "delegate_to_agent", {"agent": "lead", "goal": "x"}, CTX
        )
        assert result.error is not None
        assert result.error.kind.value == "validation_error"
        assert team.lead.requests == []

    async def test_an_unknown_agent_is_a_validation_error(self, team: Team) -> None:
        result = await team.runtime.execute(
            "delegate_to_agent", {"agent": "nobody", "goal": "x"}, CTX
        )
        assert result.error is not None
        assert result.error.kind.value == "validation_error"


class TestWiring:
    async def test_without_models_there_is_no_delegate_tool(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "toolcage.toml").write_text('[agents.a]\ntools = ["file_read"]\n')
        async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
            names = {d.name for d in runtime.registry.declarations("default")}
        assert "delegate_to_agent" not in names

    async def test_an_agent_on_a_model_the_host_lacks_fails_clearly(self, tmp_path: Path) -> None:
        text = CONFIG.replace('model = "research"\nsystem_prompt', 'model = "gone"\nsystem_prompt')
        async with team_in(tmp_path, text) as team:
            result = await team.runtime.execute(
                "delegate_to_agent", {"agent": "researcher", "goal": "x"}, CTX
            )
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "'gone'" in result.error.message

    async def test_bad_delegation_values_fail_at_load(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text("[delegation]\nmax_depth = 0\n")
        with pytest.raises(Exception, match=r"delegation\.max_depth"):
            Runtime.from_config(tmp_path / "toolcage.toml")
