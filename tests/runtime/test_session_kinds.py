"""Session kinds and ``send_message``, through ``Runtime.from_config`` and ``execute``: a
worker cannot write, send or store even with those tools registered for it (refused at the
gate, and structurally: its guests get neither the bindings nor writable mounts); a branch
sends on its parent's channel; a main session on its own."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from toolcage.host_bindings import ChannelMessage, MessageKind
from toolcage.runtime import (
    PermissionDeniedError,
    Runtime,
    SessionKind,
    SessionLink,
    ToolExecutionContext,
    ToolResult,
)

pytestmark = pytest.mark.anyio

MAIN = ToolExecutionContext(user_id="ada", session_id="s1", agent_id="lead", channel_id="chat-7")
WORKER = MAIN.child(SessionKind.WORKER, agent_id="reader", session_id="s1/reader")
BRANCH = MAIN.child(SessionKind.BRANCH, agent_id="helper", session_id="s1/helper")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


@dataclass
class RecordingChannel:
    sent: list[ChannelMessage] = field(default_factory=list)
    down: bool = False

    async def send(self, message: ChannelMessage) -> None:
        if self.down:
            raise ConnectionError("chat service unavailable")
        self.sent.append(message)


@dataclass
class Box:
    runtime: Runtime
    workspace: Path
    channel: RecordingChannel

    async def call(
        self, tool: str, args: dict[str, object], ctx: ToolExecutionContext
    ) -> ToolResult:
        return await self.runtime.execute(tool, args, ctx)


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Box]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "chart.png").write_bytes(PNG)
    (tmp_path / "toolcage.toml").write_text("[channel]\nmax_message_chars = 40\n")
    channel = RecordingChannel()
    async with Runtime.from_config(tmp_path / "toolcage.toml", channel=channel) as runtime:
        yield Box(runtime, tmp_path / "workspace", channel)


def refusal(result: ToolResult) -> dict[str, object]:
    assert result.error is not None, result.output_text
    assert result.error.kind.value == "permission_denied", result.envelope()
    return result.envelope()


class TestWorkerSession:
    async def test_a_worker_cannot_write_a_file(self, box: Box) -> None:
        result = await box.call("file_write", {"path": "note.txt", "content": "x"}, WORKER)
        envelope = refusal(result)
        assert envelope["details"] == {"required_tier": "side_effecting", "session_kind": "worker"}
        assert not (box.workspace / "note.txt").exists()

    async def test_a_worker_cannot_send_a_message_or_a_file(self, box: Box) -> None:
        refusal(await box.call("send_message", {"text": "hello"}, WORKER))
        # send_media is read_only: the gate lets it through, but the worker's guest has no
        # channel binding to send with.
        media = refusal(await box.call("send_media", {"path": "chart.png"}, WORKER))
        assert "worker session" in str(media["message"])
        assert box.channel.sent == []

    async def test_a_worker_cannot_store_a_memory(self, box: Box) -> None:
        refusal(await box.call("memory_save", {"content": "likes tea"}, WORKER))
        found = await box.call("memory_search", {"query": "tea"}, MAIN)
        assert "likes tea" not in found.output_text

    async def test_a_worker_reads_files(self, box: Box) -> None:
        (box.workspace / "facts.txt").write_text("the sky is blue\n")
        result = await box.call("file_read", {"path": "facts.txt"}, WORKER)
        assert not result.is_error, result.output_text
        assert "the sky is blue" in result.output_text

    async def test_a_write_tool_past_the_gate_still_cannot_write(self, box: Box) -> None:
        # The tool itself, called as a worker without the pipeline's gate: its guest gets
        # the mounts read-only, so the write fails inside the sandbox.
        tool = box.runtime.registry.get("file_write")
        with pytest.raises(PermissionDeniedError, match="not a file on a writable mount"):
            await tool.execute({"path": "/workspace/note.txt", "content": "x"}, WORKER)
        assert not (box.workspace / "note.txt").exists()
        sender = box.runtime.registry.get("send_message")
        with pytest.raises(PermissionDeniedError, match="worker session"):
            await sender.execute({"text": "hello"}, WORKER)
        assert box.channel.sent == []


class TestSendMessage:
    async def test_a_main_session_sends_on_its_own_channel(self, box: Box) -> None:
        result = await box.call("send_message", {"text": "Halfway there."}, MAIN)
        assert not result.is_error, result.output_text
        (sent,) = box.channel.sent
        assert (sent.kind, sent.text, sent.channel_id, sent.user_id) == (
            MessageKind.MESSAGE,
            "Halfway there.",
            "chat-7",
            "ada",
        )
        assert json.loads(result.output_text)["channel_id"] == "chat-7"

    async def test_a_branch_sends_on_its_parents_channel(self, box: Box) -> None:
        own_thread = ToolExecutionContext(
            user_id="ada",
            session_id="s1/side",
            agent_id="helper",
            channel_id="side-thread",
            session_kind=SessionKind.BRANCH,
            parents=(SessionLink("lead", "s1", "chat-7"),),
        )
        for ctx in (BRANCH, own_thread):
            result = await box.call("send_message", {"text": "From the branch."}, ctx)
            assert not result.is_error, result.output_text
        assert [m.channel_id for m in box.channel.sent] == ["chat-7", "chat-7"]
        media = await box.call("send_media", {"path": "chart.png"}, own_thread)
        assert not media.is_error, media.output_text
        assert box.channel.sent[-1].channel_id == "chat-7"

    async def test_the_channel_policy_bounds_the_text(self, box: Box) -> None:
        long = await box.call("send_message", {"text": "x" * 41}, MAIN)
        assert long.error is not None
        assert long.error.kind.value == "validation_error"
        assert "max_message_chars" in long.error.message
        blank = await box.call("send_message", {"text": "   "}, MAIN)
        assert blank.error is not None
        assert blank.error.kind.value == "validation_error"
        assert box.channel.sent == []

    async def test_a_channel_that_fails_fails_the_call(self, box: Box) -> None:
        box.channel.down = True
        result = await box.call("send_message", {"text": "hello"}, MAIN)
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "could not send the message: ConnectionError" in result.error.message

    async def test_without_a_channel_nothing_is_sent(self, tmp_path: Path) -> None:
        async with Runtime.from_config(None) as runtime:
            result = await runtime.execute("send_message", {"text": "hi"}, MAIN)
        assert result.error is not None
        assert "no channel is connected" in result.error.message
