"""OpenAI Responses: checked against the ``openai`` SDK's own types."""

from __future__ import annotations

from typing import Any

import pydantic
from openai.types.responses import (
    EasyInputMessageParam,
    FunctionToolParam,
    Response,
    ResponseFunctionToolCallParam,
    ResponseReasoningItemParam,
    ResponseStreamEvent,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from toolcage.runtime import ToolCall, ToolResult
from toolcage.runtime.providers import (
    AssistantMessage,
    ModelRequest,
    OpenAIResponsesAdapter,
    ToolOutcome,
    ToolResultsMessage,
    UserMessage,
)

from .samples import CONVERSATION, DECLS, conforms

ITEM_TYPES: dict[str | None, Any] = {
    None: EasyInputMessageParam,
    "function_call": ResponseFunctionToolCallParam,
    "function_call_output": FunctionCallOutput,
}


class TestRequest:
    def test_tool_definitions_validate_as_sdk_function_tools(self) -> None:
        tools = OpenAIResponsesAdapter().tool_definitions(DECLS)
        adapter = pydantic.TypeAdapter(FunctionToolParam)
        assert [conforms(adapter, t) for t in tools] == tools

    def test_input_items_validate_and_results_name_call_ids(self) -> None:
        body = OpenAIResponsesAdapter().request_body(CONVERSATION, model="m", stream=False)
        assert body["instructions"] == "Be brief."
        for item in body["input"]:
            adapter = pydantic.TypeAdapter(ITEM_TYPES[item.get("type")])
            assert conforms(adapter, item) == item
        outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
        assert [o["call_id"] for o in outputs] == ["call_A1", "call_B2"]
        text_part, image_part = outputs[0]["output"]
        assert text_part == {"type": "input_text", "text": "hi"}
        assert image_part["image_url"].startswith("data:image/png;base64,")
        assert '"error_type": "validation_error"' in outputs[1]["output"]


def response_object(output: list[dict[str, Any]]) -> dict[str, Any]:
    return Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1.0,
            "model": "gpt-x",
            "status": "completed",
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 20,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": 4,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 24,
            },
        }
    ).model_dump(mode="json")


FUNCTION_CALL = {
    "type": "function_call",
    "id": "fc_item_1",
    "call_id": "call_77",
    "name": "echo",
    "arguments": '{"text": "z"}',
    "status": "completed",
}


class TestResponse:
    def test_sdk_response_parses_with_call_id_not_item_id(self) -> None:
        message = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
        response = OpenAIResponsesAdapter().parse_response(
            response_object([message, FUNCTION_CALL])
        )
        assert response.message.text == "ok"
        assert response.message.calls == (ToolCall("echo", {"text": "z"}, "call_77"),)
        assert response.usage is not None
        assert response.usage.total_tokens == 24


class TestStream:
    def test_sdk_stream_events_assemble_interleaved_calls(self) -> None:
        second = {**FUNCTION_CALL, "id": "fc_2", "call_id": "call_88", "arguments": ""}
        first = {**FUNCTION_CALL, "arguments": "", "status": "in_progress"}
        raw: list[dict[str, Any]] = [
            {"type": "response.output_item.added", "output_index": 0, "item": first},
            {"type": "response.output_item.added", "output_index": 1, "item": second},
            {"type": "response.function_call_arguments.delta", "output_index": 1,
             "item_id": "fc_2", "delta": '{"text": "b'},
            {"type": "response.function_call_arguments.delta", "output_index": 0,
             "item_id": "fc_item_1", "delta": '{"text": "a"}'},
            {"type": "response.function_call_arguments.delta", "output_index": 1,
             "item_id": "fc_2", "delta": '"}'},
            {"type": "response.function_call_arguments.done", "output_index": 0,
             "item_id": "fc_item_1", "arguments": '{"text": "a"}', "name": "echo"},
            {"type": "response.function_call_arguments.done", "output_index": 1,
             "item_id": "fc_2", "arguments": '{"text": "b"}', "name": "echo"},
            {"type": "response.completed", "response": response_object([])},
        ]  # fmt: skip
        adapter = pydantic.TypeAdapter(ResponseStreamEvent)
        decoder = OpenAIResponsesAdapter().stream_decoder()
        for number, event in enumerate(raw):
            sdk_event = adapter.validate_python({**event, "sequence_number": number})
            data = adapter.dump_python(sdk_event, mode="json")
            decoder.feed(data["type"], data)
        response = decoder.finish()
        assert response.message.calls == (
            ToolCall("echo", {"text": "a"}, "call_77"),
            ToolCall("echo", {"text": "b"}, "call_88"),
        )
        assert response.usage is not None
        assert response.usage.input_tokens == 20


REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Need the echo tool."}],
    "encrypted_content": "gAAAA-opaque",
    "status": None,
}


def next_request(adapter: OpenAIResponsesAdapter, message: AssistantMessage) -> dict[str, Any]:
    outcome = ToolOutcome(message.calls[0], ToolResult.text("z"))
    conversation = ModelRequest(
        [UserMessage("go"), message, ToolResultsMessage((outcome,))], tools=DECLS
    )
    return adapter.request_body(conversation, model="o-x", stream=False)


class TestReasoning:
    def test_reasoning_and_call_items_go_back_whole_and_in_order(self) -> None:
        adapter = OpenAIResponsesAdapter()
        response = adapter.parse_response(response_object([REASONING, FUNCTION_CALL]))
        items = next_request(adapter, response.message)["input"]
        assert [i.get("type") for i in items] == [
            None,
            "reasoning",
            "function_call",
            "function_call_output",
        ]
        reasoning, function_call = items[1:3]
        assert conforms(pydantic.TypeAdapter(ResponseReasoningItemParam), reasoning) == reasoning
        assert reasoning == {k: v for k, v in REASONING.items() if v is not None}
        assert conforms(pydantic.TypeAdapter(ResponseFunctionToolCallParam), function_call) == (
            function_call
        )
        assert function_call["id"] == "fc_item_1"
        assert function_call["call_id"] == "call_77"

    def test_streamed_reasoning_is_the_done_item(self) -> None:
        added = {"type": "reasoning", "id": "rs_1", "summary": []}
        call_added = {**FUNCTION_CALL, "arguments": "", "status": "in_progress"}
        raw: list[dict[str, Any]] = [
            {"type": "response.output_item.added", "output_index": 0, "item": added},
            {"type": "response.reasoning_summary_text.delta", "output_index": 0,
             "item_id": "rs_1", "summary_index": 0, "delta": "Need the echo tool."},
            {"type": "response.output_item.done", "output_index": 0,
             "item": {**REASONING, "status": "completed"}},
            {"type": "response.output_item.added", "output_index": 1, "item": call_added},
            {"type": "response.function_call_arguments.done", "output_index": 1,
             "item_id": "fc_item_1", "arguments": '{"text": "z"}', "name": "echo"},
            {"type": "response.output_item.done", "output_index": 1, "item": FUNCTION_CALL},
            {"type": "response.completed", "response": response_object([])},
        ]  # fmt: skip
        events = pydantic.TypeAdapter(ResponseStreamEvent)
        decoder = OpenAIResponsesAdapter().stream_decoder()
        for number, event in enumerate(raw):
            data = events.dump_python(
                events.validate_python({**event, "sequence_number": number}), mode="json"
            )
            decoder.feed(data["type"], data)
        items = next_request(OpenAIResponsesAdapter(), decoder.finish().message)["input"]
        assert [i.get("id") for i in items[1:3]] == ["rs_1", "fc_item_1"]
        assert items[1]["encrypted_content"] == "gAAAA-opaque"
        assert items[1]["summary"] == REASONING["summary"]

    def test_messages_built_by_hand_keep_text_then_calls(self) -> None:
        message = AssistantMessage("Let me look.", (ToolCall("echo", {"text": "z"}, "c1"),))
        items = next_request(OpenAIResponsesAdapter(), message)["input"]
        assert items[1] == {"role": "assistant", "content": "Let me look."}
        assert items[2] == {
            "type": "function_call",
            "call_id": "c1",
            "name": "echo",
            "arguments": '{"text": "z"}',
        }

    def test_without_storage_reasoning_is_asked_for_encrypted(self) -> None:
        adapter = OpenAIResponsesAdapter(reasoning={"effort": "high"}, store=False)
        body = adapter.request_body(ModelRequest([UserMessage("go")]), model="o", stream=False)
        assert body["store"] is False
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["reasoning"] == {"effort": "high"}
        plain = OpenAIResponsesAdapter().request_body(
            ModelRequest([UserMessage("go")]), model="o", stream=False
        )
        assert not {"store", "include", "reasoning"} & plain.keys()
