"""A result for two audiences: the model gets the text and the ``details`` through every
provider format and MCP; a person gets the ``display`` line (the CLI, MCP ``_meta``), which
no model is sent; ``artifacts`` ride in the envelope and are bounded like any output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from anthropic.types import MessageParam
from google.genai import types as gemini
from openai.types.chat import ChatCompletionToolMessageParam
from openai.types.responses.response_input_item_param import FunctionCallOutput
from toolcage.runtime import (
    Artifact,
    ArtifactAction,
    Runtime,
    SafetyTier,
    ToolCall,
    ToolResult,
    tool,
)
from toolcage.runtime._result import ARTIFACTS_TRUNCATED
from toolcage.runtime.agent.providers.base import details_text
from toolcage.runtime.providers import (
    AnthropicAdapter,
    AssistantMessage,
    GeminiAdapter,
    ModelRequest,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ToolOutcome,
    ToolResultsMessage,
    UserMessage,
)

from .agent.providers.samples import conforms
from .cli.test_cli import toolcage
from .mcp.serve.test_mcp_server import stdio_session, text_of

pytestmark = pytest.mark.anyio

CONFIG = """
[[mounts.areas]]
host = "workspace"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }

[limits]
truncate_bytes = 4096
"""


@tool(safety_tier=SafetyTier.READ_ONLY)
def many_changes(count: int) -> ToolResult:
    """Report ``count`` files written."""
    made = tuple(
        Artifact("file", f"/workspace/out/{n:05d}.txt", ArtifactAction.CREATED)
        for n in range(count)
    )
    return ToolResult.text(f"wrote {count} files", details={"files": count}, artifacts=made)


@tool(safety_tier=SafetyTier.READ_ONLY)
def totals() -> dict[str, int]:
    """Return totals (a value, so its text is its JSON)."""
    return {"a": 1, "b": 2}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("one\ntwo\n")
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    return tmp_path


async def read_notes(site: Path) -> ToolResult:
    async with Runtime.from_config(site / "toolcage.toml") as runtime:
        result = await runtime.execute("file_read", {"path": "/workspace/notes.txt"})
    assert not result.is_error, result.output_text
    assert result.display == "Read notes.txt (2 lines)"
    return result


def conversation(result: ToolResult, name: str = "file_read") -> ModelRequest:
    call = ToolCall(name, {"path": "/workspace/notes.txt"}, "call_1")
    return ModelRequest(
        [
            UserMessage("Read my notes."),
            AssistantMessage("", (call,)),
            ToolResultsMessage((ToolOutcome(call, result),)),
        ]
    )


class TestEnvelopeAndBounds:
    async def test_artifacts_survive_the_pipeline_and_ride_in_the_envelope(
        self, site: Path
    ) -> None:
        async with Runtime.from_config(site / "toolcage.toml", tools=[many_changes]) as runtime:
            result = await runtime.execute("many_changes", {"count": 2})
        assert result.tool == "many_changes"
        assert result.duration > 0
        refs = [a.ref for a in result.artifacts]
        assert refs == ["/workspace/out/00000.txt", "/workspace/out/00001.txt"]
        envelope = result.envelope()
        assert list(envelope) == ["status", "result", "details", "artifacts", "duration_ms"]
        assert envelope["artifacts"][1] == {
            "kind": "file",
            "ref": "/workspace/out/00001.txt",
            "action": "created",
        }

    async def test_a_huge_artifact_list_is_cut_with_the_marker_and_kept(self, site: Path) -> None:
        async with Runtime.from_config(site / "toolcage.toml", tools=[many_changes]) as runtime:
            result = await runtime.execute("many_changes", {"count": 10_000})
            *kept, last = result.artifacts
            assert 0 < len(kept) < 100
            assert last.kind == ARTIFACTS_TRUNCATED
            assert last.action is ArtifactAction.OMITTED
            assert last.ref.startswith("[output truncated — original size: ")
            handle = last.ref.split('handle "')[1].split('"')[0]
            page = await runtime.execute("tool_output_read", {"handle": handle, "max_bytes": 4096})
            assert page.output_text.startswith('[{"kind": "file", "ref": "/workspace/out/00000')
            assert page.details["total_bytes"] > 500_000
        assert len(json.dumps(result.envelope())) < 3 * 4096


class TestModelDelivery:
    """The details reach the model in each provider's format; the display never does."""

    async def test_openai_chat(self, site: Path) -> None:
        result = await read_notes(site)
        body = OpenAIChatAdapter().request_body(conversation(result), model="m", stream=False)
        [message] = [m for m in body["messages"] if m["role"] == "tool"]
        assert conforms(pydantic.TypeAdapter(ChatCompletionToolMessageParam), message) == message
        text, details = message["content"].rsplit("\n", 1)
        assert text == "one\ntwo\n"
        assert json.loads(details.removeprefix("[details] ")) == result.details
        assert "Read notes.txt" not in json.dumps(body)

    async def test_openai_responses(self, site: Path) -> None:
        result = await read_notes(site)
        body = OpenAIResponsesAdapter().request_body(conversation(result), model="m", stream=False)
        [item] = [i for i in body["input"] if i.get("type") == "function_call_output"]
        assert conforms(pydantic.TypeAdapter(FunctionCallOutput), item) == item
        assert item["output"].startswith("one\ntwo\n\n[details] {")
        assert '"lines": 2' in item["output"]
        assert "Read notes.txt" not in json.dumps(body)

    async def test_anthropic(self, site: Path) -> None:
        result = await read_notes(site)
        body = AnthropicAdapter().request_body(conversation(result), model="c", stream=False)
        pydantic.TypeAdapter(MessageParam).validate_python(body["messages"][2])
        [block] = body["messages"][2]["content"]
        text, details = block["content"]
        assert text == {"type": "text", "text": "one\ntwo\n"}
        assert details["type"] == "text"
        assert json.loads(details["text"].removeprefix("[details] ")) == result.details
        assert "Read notes.txt" not in json.dumps(body)

    async def test_gemini(self, site: Path) -> None:
        result = await read_notes(site)
        body = GeminiAdapter().request_body(conversation(result), model="g", stream=False)
        for content in body["contents"]:
            gemini.Content.model_validate_json(json.dumps(content))
        response = body["contents"][2]["parts"][0]["functionResponse"]["response"]
        assert response["output"] == "one\ntwo\n"
        assert response["details"] == result.details
        assert "Read notes.txt" not in json.dumps(body)

    async def test_details_that_are_the_text_are_not_sent_twice(self, site: Path) -> None:
        async with Runtime.from_config(site / "toolcage.toml", tools=[totals]) as runtime:
            result = await runtime.execute("totals", {})
        assert result.details == {"a": 1, "b": 2}
        body = OpenAIChatAdapter().request_body(
            conversation(result, "totals"), model="m", stream=False
        )
        [message] = [m for m in body["messages"] if m["role"] == "tool"]
        assert message["content"] == '{"a": 1, "b": 2}'
        gemini_body = GeminiAdapter().request_body(
            conversation(result, "totals"), model="g", stream=False
        )
        response = gemini_body["contents"][2]["parts"][0]["functionResponse"]["response"]
        assert "details" not in response
        laid_out = ToolResult.text(json.dumps({"a": 1}, indent=2), details={"a": 1})
        assert details_text(laid_out) == ""  # an MCP tool's structured content and its text


class TestPeopleAndClients:
    async def test_mcp_sends_details_as_structured_content_and_the_display_in_meta(
        self, site: Path
    ) -> None:
        async with stdio_session(site, "--config", str(site / "toolcage.toml")) as session:
            result = await session.call_tool("file_read", {"path": "/workspace/notes.txt"})
        assert not result.is_error
        assert text_of(result) == "one\ntwo\n"
        structured: dict[str, Any] = result.structured_content or {}
        assert structured["details"]["lines"] == 2
        assert "display" not in structured
        assert result.meta == {"toolcage/display": "Read notes.txt (2 lines)"}

    def test_the_cli_prints_the_display_on_stderr_and_the_envelope_on_stdout(
        self, site: Path
    ) -> None:
        done = toolcage(
            "call",
            "file_write",
            '{"path": "/workspace/new.txt", "content": "hi"}',
            "--config",
            str(site / "toolcage.toml"),
        )
        assert done.returncode == 0, done.stderr
        envelope = json.loads(done.stdout)
        assert envelope["artifacts"] == [
            {"kind": "file", "ref": "/workspace/new.txt", "action": "created"}
        ]
        assert "display" not in envelope
        assert done.stderr.splitlines() == ["Created new.txt (2 B)"]
