"""OpenAI Chat Completions: checked against the ``openai`` SDK's own types."""

from __future__ import annotations

import json
from typing import Any

import pydantic
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
    ChatCompletionSystemMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionUserMessageParam,
)
from toolcage.runtime import ToolCall
from toolcage.runtime.providers import OpenAIChatAdapter

from .samples import CONVERSATION, DECLS, conforms

ROLES: dict[str, Any] = {
    "system": ChatCompletionSystemMessageParam,
    "user": ChatCompletionUserMessageParam,
    "assistant": ChatCompletionAssistantMessageParam,
    "tool": ChatCompletionToolMessageParam,
}


class TestRequest:
    def test_tool_definitions_validate_as_sdk_tool_params(self) -> None:
        tools = OpenAIChatAdapter().tool_definitions(DECLS)
        adapter = pydantic.TypeAdapter(ChatCompletionFunctionToolParam)
        assert [conforms(adapter, t) for t in tools] == tools
        assert tools[0]["function"]["name"] == "echo"

    def test_every_message_validates_as_its_sdk_param(self) -> None:
        body = OpenAIChatAdapter().request_body(CONVERSATION, model="gpt-x", stream=False)
        for message in body["messages"]:
            adapter = pydantic.TypeAdapter(ROLES[message["role"]])
            assert conforms(adapter, message) == message

    def test_results_keep_call_ids_and_flag_errors_and_images(self) -> None:
        messages = OpenAIChatAdapter().request_body(CONVERSATION, model="m", stream=True)[
            "messages"
        ]
        tool_messages = [m for m in messages if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == ["call_A1", "call_B2"]
        assert '"error_type": "validation_error"' in tool_messages[1]["content"]
        assert '"field": "count"' in tool_messages[1]["content"]
        image_message = messages[-1]
        assert image_message["role"] == "user"
        assert image_message["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


class TestResponse:
    def test_sdk_completion_parses_into_calls(self) -> None:
        completion = ChatCompletion.model_validate(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-x",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "echo", "arguments": '{"text":"a"}'},
                                },
                                {
                                    "id": "call_2",
                                    "type": "function",
                                    "function": {"name": "echo", "arguments": '{"text":'},
                                },
                            ],
                        },
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
            }
        )
        response = OpenAIChatAdapter().parse_response(completion.model_dump(mode="json"))
        assert response.message.calls == (
            ToolCall("echo", {"text": "a"}, "call_1"),
            ToolCall("echo", '{"text":', "call_2"),
        )
        assert response.usage is not None
        assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
        assert response.stop_reason == "tool_calls"


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    raw = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    return ChatCompletionChunk.model_validate(raw).model_dump(mode="json", exclude_unset=True)


class TestStream:
    def test_interleaved_fragments_assemble_in_call_order(self) -> None:
        def part(index: int, **fields: Any) -> dict[str, Any]:
            return {"tool_calls": [{"index": index, **fields}]}

        events = [
            chunk({"role": "assistant", "content": "Let me "}),
            chunk({"content": "check."}),
            chunk(part(0, id="call_x", type="function", function={"name": "echo"})),
            chunk(part(1, id="call_y", type="function", function={"name": "describe"})),
            chunk(part(0, function={"arguments": '{"te'})),
            chunk(part(1, function={"arguments": '{"count": '})),
            chunk(part(0, function={"arguments": 'xt": "a"}'})),
            chunk(part(1, function={"arguments": "3}"})),
            chunk({}, "tool_calls"),
        ]
        usage = {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}
        final = ChatCompletionChunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": "m",
                "choices": [],
                "usage": usage,
            }
        ).model_dump(mode="json")
        decoder = OpenAIChatAdapter().stream_decoder()
        for event in [*events, final]:
            decoder.feed("", event)
        response = decoder.finish()
        assert response.message.text == "Let me check."
        assert response.message.calls == (
            ToolCall("echo", {"text": "a"}, "call_x"),
            ToolCall("describe", {"count": 3}, "call_y"),
        )
        assert response.usage is not None
        assert response.usage.total_tokens == 14

    def test_calls_sent_whole_at_one_index_stay_apart(self) -> None:
        def whole(call_id: str, text: str) -> dict[str, Any]:
            function = {"name": "echo", "arguments": json.dumps({"text": text})}
            return {"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                    "function": function}]}  # fmt: skip

        decoder = OpenAIChatAdapter().stream_decoder()
        for event in (chunk(whole("call_1", "a")), chunk(whole("call_2", "b"))):
            decoder.feed("", event)
        assert decoder.finish().message.calls == (
            ToolCall("echo", {"text": "a"}, "call_1"),
            ToolCall("echo", {"text": "b"}, "call_2"),
        )
