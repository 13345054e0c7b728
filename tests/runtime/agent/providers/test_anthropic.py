"""Anthropic Messages: checked against the ``anthropic`` SDK's own types."""

from __future__ import annotations

from typing import Any

import pydantic
from anthropic.types import (
    ImageBlockParam,
    Message,
    MessageParam,
    RawMessageStreamEvent,
    RedactedThinkingBlockParam,
    TextBlockParam,
    ThinkingBlockParam,
    ThinkingConfigEnabledParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from toolcage.runtime import ToolCall
from toolcage.runtime.agent.providers.anthropic import THINKING
from toolcage.runtime.providers import AnthropicAdapter, ModelRequest, UserMessage

from .samples import CONVERSATION, DECLS, conforms

BLOCKS: dict[str, Any] = {
    "text": TextBlockParam,
    "image": ImageBlockParam,
    "tool_use": ToolUseBlockParam,
    "tool_result": ToolResultBlockParam,
}


def check_block(block: dict[str, Any]) -> None:
    """One content block against its own SDK type (unions of lazily validated iterables
    cannot be dumped back faithfully, so nested blocks are checked one by one)."""
    adapter = pydantic.TypeAdapter(BLOCKS[block["type"]])
    if isinstance(block.get("content"), list):
        adapter.validate_python(block)
        for inner in block["content"]:
            check_block(inner)
    else:
        assert conforms(adapter, block) == block


class TestRequest:
    def test_tool_definitions_validate_as_sdk_tool_params(self) -> None:
        tools = AnthropicAdapter().tool_definitions(DECLS)
        adapter = pydantic.TypeAdapter(ToolParam)
        assert [conforms(adapter, t) for t in tools] == tools

    def test_messages_validate_and_results_carry_ids_images_and_error_flag(self) -> None:
        body = AnthropicAdapter().request_body(CONVERSATION, model="claude", stream=True)
        assert body["system"] == "Be brief."
        assert body["stream"] is True
        adapter = pydantic.TypeAdapter(MessageParam)
        for message in body["messages"]:
            adapter.validate_python(message)
            if isinstance(message["content"], list):
                for block in message["content"]:
                    check_block(block)
        tool_use = body["messages"][1]["content"][2]
        assert tool_use == {
            "type": "tool_use",
            "id": "call_B2",
            "name": "describe",
            "input": {"count": 2, "ratio": 0.5},
        }
        ok, failed = body["messages"][2]["content"]
        assert ok["tool_use_id"] == "call_A1"
        assert "is_error" not in ok
        assert [c["type"] for c in ok["content"]] == ["text", "image"]
        assert ok["content"][1]["source"]["media_type"] == "image/png"
        assert failed["tool_use_id"] == "call_B2"
        assert failed["is_error"] is True


class TestResponse:
    def test_sdk_message_parses_into_calls(self) -> None:
        message = Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude",
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "content": [
                    {"type": "text", "text": "Two calls."},
                    {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {}},
                ],
                "usage": {"input_tokens": 30, "output_tokens": 12},
            }
        )
        response = AnthropicAdapter().parse_response(message.model_dump(mode="json"))
        assert response.message.text == "Two calls."
        assert response.message.calls == (
            ToolCall("echo", {"text": "a"}, "toolu_1"),
            ToolCall("echo", {}, "toolu_2"),
        )
        assert response.usage is not None
        assert response.usage.total_tokens == 42
        assert response.stop_reason == "tool_use"


def tool_start(index: int, call_id: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": "echo", "input": {}}
    return {"type": "content_block_start", "index": index, "content_block": block}


def json_delta(index: int, text: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": text}
    return {"type": "content_block_delta", "index": index, "delta": delta}


class TestStream:
    def test_sdk_events_assemble_calls_and_malformed_json_stays_text(self) -> None:
        start_message: dict[str, Any] = {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 25, "output_tokens": 1},
        }  # fmt: skip
        raw: list[dict[str, Any]] = [
            {"type": "message_start", "message": start_message},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "On it."}},
            {"type": "content_block_stop", "index": 0},
            tool_start(1, "toolu_a"),
            json_delta(1, '{"text": '),
            json_delta(1, '"x"}'),
            {"type": "content_block_stop", "index": 1},
            tool_start(2, "toolu_b"),
            json_delta(2, '{"text": "unterminated'),
            {"type": "content_block_stop", "index": 2},
            tool_start(3, "toolu_c"),
            {"type": "content_block_stop", "index": 3},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
             "usage": {"output_tokens": 40}},
            {"type": "message_stop"},
        ]  # fmt: skip
        adapter = pydantic.TypeAdapter(RawMessageStreamEvent)
        decoder = AnthropicAdapter().stream_decoder()
        for event in raw:
            data = adapter.dump_python(adapter.validate_python(event), mode="json")
            decoder.feed(data["type"], data)
        response = decoder.finish()
        assert response.message.text == "On it."
        assert response.message.calls == (
            ToolCall("echo", {"text": "x"}, "toolu_a"),
            ToolCall("echo", '{"text": "unterminated', "toolu_b"),
            ToolCall("echo", {}, "toolu_c"),
        )
        assert response.usage is not None
        assert (response.usage.input_tokens, response.usage.output_tokens) == (25, 40)
        assert response.stop_reason == "tool_use"


THINKING_BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "The user wants x.", "signature": "sig-abc=="},
    {"type": "redacted_thinking", "data": "opaque-data=="},
]


class TestExtendedThinking:
    def test_thinking_blocks_of_a_message_go_back_first_and_unchanged(self) -> None:
        message = Message.model_validate(
            {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                "stop_reason": "tool_use", "stop_sequence": None,
                "content": [
                    *THINKING_BLOCKS,
                    {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "a"}},
                ],
                "usage": {"input_tokens": 30, "output_tokens": 12},
            }
        )  # fmt: skip
        adapter = AnthropicAdapter(thinking_budget=2048)
        response = adapter.parse_response(message.model_dump(mode="json"))
        assert response.message.text == ""
        request = ModelRequest([UserMessage("Go."), response.message], list(DECLS))
        body = adapter.request_body(request, model="claude", stream=False)
        sent = body["messages"][1]["content"]
        assert sent[:2] == THINKING_BLOCKS
        assert sent[2]["type"] == "tool_use"
        pydantic.TypeAdapter(ThinkingBlockParam).validate_python(sent[0])
        pydantic.TypeAdapter(RedactedThinkingBlockParam).validate_python(sent[1])
        thinking = pydantic.TypeAdapter(ThinkingConfigEnabledParam)
        assert conforms(thinking, body["thinking"]) == {"type": "enabled", "budget_tokens": 2048}

    def test_streamed_thinking_is_assembled_with_its_signature(self) -> None:
        raw: list[dict[str, Any]] = [
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "thinking_delta", "thinking": "The user "}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "thinking_delta", "thinking": "wants x."}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "signature_delta", "signature": "sig-abc=="}},
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1,
             "content_block": {"type": "redacted_thinking", "data": "opaque-data=="}},
            {"type": "content_block_stop", "index": 1},
            tool_start(2, "toolu_a"),
            json_delta(2, '{"text": "x"}'),
            {"type": "content_block_stop", "index": 2},
        ]  # fmt: skip
        events = pydantic.TypeAdapter(RawMessageStreamEvent)
        decoder = AnthropicAdapter().stream_decoder()
        for event in raw:
            data = events.dump_python(events.validate_python(event), mode="json")
            decoder.feed(data["type"], data)
        message = decoder.finish().message
        assert message.echo[THINKING] == tuple(THINKING_BLOCKS)
        assert message.calls == (ToolCall("echo", {"text": "x"}, "toolu_a"),)

    def test_messages_without_thinking_carry_none(self) -> None:
        body = AnthropicAdapter().request_body(CONVERSATION, model="claude", stream=False)
        assert "thinking" not in body
        types = {b["type"] for m in body["messages"] if isinstance(m["content"], list)
                 for b in m["content"]}  # fmt: skip
        assert not types & {"thinking", "redacted_thinking"}
