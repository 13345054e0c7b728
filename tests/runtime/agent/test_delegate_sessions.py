"""Delegated agents as sessions: a ``branch`` (the default) sends on the delegating
session's channel and its approvals go up the chain to the first session with a channel;
a ``worker`` profile cannot send, store or write."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from toolcage.host_bindings import MessageKind
from toolcage.runtime import SessionKind, ToolExecutionContext, UserMessage, run_turn

from ..fake_llm import Reply
from .test_delegate import CTX, PNG, call, delegate, messages, team_in

pytestmark = pytest.mark.anyio

CONFIG = """
[agents.lead]
tools = ["delegate_to_agent"]
model = "main"

[agents.researcher]
tools = ["file_read", "send_message", "delegate_to_agent", "launch"]
model = "research"

[agents.writer]
tools = ["file_read", "launch"]
model = "research"

[agents.reader]
tools = ["file_read", "file_write", "send_message", "send_media", "memory_save", "launch"]
model = "research"
session = "worker"

[delegation]
max_depth = 2
"""


def last_results(model_requests: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in model_requests if m["role"] == "tool"]


class TestBranch:
    async def test_a_branch_sends_on_the_delegating_sessions_channel(self, tmp_path: Path) -> None:
        async with team_in(tmp_path, CONFIG) as team:
            team.lead.script = [delegate("researcher", "Tell the user you started."), Reply("ok")]
            team.research.script = [
                Reply(calls=[call("m", "send_message", text="Started on it.")]),
                Reply("Told them."),
            ]
            await team.turn()
        (sent,) = team.recorder.sent
        assert (sent.kind, sent.text, sent.channel_id) == (
            MessageKind.MESSAGE,
            "Started on it.",
            "chat-7",
        )

    async def test_an_approval_two_levels_down_reaches_the_top_level_channel(
        self, tmp_path: Path
    ) -> None:
        async with team_in(tmp_path, CONFIG) as team:
            team.lead.script = [delegate("researcher", "Get the writer to launch."), Reply("ok")]
            team.research.script = [
                delegate("writer", "Launch the probe.", call_id="d2"),
                Reply(calls=[call("l", "launch", target="probe")]),
                Reply("Launched."),
                Reply("The writer launched it."),
            ]
            await team.turn()
        (request,) = team.recorder.asked
        assert request.tool == "launch"
        assert request.channel_id == "chat-7"
        assert request.chain == ("lead", "researcher", "writer")
        assert request.context.session_kind is SessionKind.BRANCH
        assert request.context.session_id == "s1/researcher/writer"

    async def test_without_a_channel_up_the_chain_the_approval_is_denied(
        self, tmp_path: Path
    ) -> None:
        async with team_in(tmp_path, CONFIG) as team:
            team.lead.script = [delegate("researcher", "Launch the probe."), Reply("ok")]
            team.research.script = [
                Reply(calls=[call("l", "launch", target="probe")]),
                Reply("I could not."),
            ]
            no_channel = ToolExecutionContext(
                principal=dataclasses.replace(CTX.principal, channel_id=None)
            )
            await run_turn(team.client, team.runtime, [UserMessage("Go.")], context=no_channel)
        assert team.recorder.asked == []
        (result,) = last_results(messages(team.research, 1))
        refusal = json.loads(result)
        assert refusal["error_type"] == "permission_denied"
        assert "no session in the chain lead > researcher has a channel" in refusal["message"]
        assert refusal["details"] == {
            "required_tier": "privileged",
            "chain": ["lead", "researcher"],
        }


class TestWorker:
    async def test_a_worker_agent_reads_but_cannot_write_send_store_or_launch(
        self, tmp_path: Path
    ) -> None:
        async with team_in(tmp_path, CONFIG) as team:
            (team.workspace / "facts.txt").write_text("the answer is 42\n")
            (team.workspace / "chart.png").write_bytes(PNG)
            team.lead.script = [delegate("reader", "Read facts.txt and report."), Reply("ok")]
            team.research.script = [
                Reply(
                    calls=[
                        call("r", "file_read", path="facts.txt"),
                        call("w", "file_write", path="out.txt", content="x"),
                        call("m", "send_message", text="hi"),
                        call("s", "send_media", path="chart.png"),
                        call("n", "memory_save", content="42"),
                        call("l", "launch", target="probe"),
                    ]
                ),
                Reply("The answer is 42."),
            ]
            await team.turn()
        read, *refused = last_results(messages(team.research, 1))
        assert "the answer is 42" in read
        assert [json.loads(text)["error_type"] for text in refused] == ["permission_denied"] * 5
        assert team.recorder.sent == []
        assert team.recorder.asked == []
        assert not (team.workspace / "out.txt").exists()
