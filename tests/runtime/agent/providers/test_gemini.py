"""Gemini: checked against the ``google-genai`` SDK's own types (which forbid unknown keys)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.genai import types
from toolcage.runtime import ToolCall
from toolcage.runtime.agent.providers.gemini import GENERATED_ID_PREFIX
from toolcage.runtime.providers import (
    AssistantMessage,
    GeminiAdapter,
    ModelRequest,
    ToolOutcome,
    ToolResultsMessage,
    UserMessage,
    gemini_schema,
)

from .samples import AWKWARD, CONVERSATION, DECLS

DUMP: dict[str, Any] = {"mode": "json", "by_alias": True, "exclude_none": True}


class TestSchemaSubset:
    def test_declarations_validate_as_sdk_tools(self) -> None:
        tools = GeminiAdapter().tool_definitions(DECLS)
        (tool,) = tools
        assert types.Tool.model_validate(tool).model_dump(**DUMP) == tool

    def test_unsupported_keywords_are_rewritten(self) -> None:
        schema = gemini_schema(AWKWARD.parameters)
        text = json.dumps(schema)
        for keyword in ("additionalProperties", "$ref", "$defs", "default", "$schema", "const"):
            assert keyword not in text
        props = schema["properties"]
        assert props["room"] == {"type": "STRING", "nullable": True}
        assert props["size"] == {"type": "INTEGER", "minimum": 1, "nullable": True}
        assert props["host"]["properties"]["email"] == {"type": "STRING"}
        assert props["guests"]["items"]["type"] == "OBJECT"
        assert props["kind"] == {"type": "STRING", "enum": ["meeting"]}
        assert props["when"]["format"] == "date-time"
        assert "format" not in props["uri"]  # "uri" is not a format Gemini accepts
        assert props["level"]["type"] == "INTEGER"
        assert "1, 2, 3" in props["level"]["description"]
        assert schema["required"] == ["when", "host"]  # names without a property dropped

    def test_a_tool_without_parameters_has_no_parameters_key(self) -> None:
        from toolcage.runtime import FunctionDecl

        decl = FunctionDecl("now", "The time.", {"type": "object", "properties": {}})
        (tool,) = GeminiAdapter().tool_definitions([decl])
        assert tool["functionDeclarations"] == [{"name": "now", "description": "The time."}]
        types.Tool.model_validate(tool)


class TestRequest:
    def test_contents_validate_as_sdk_contents(self) -> None:
        body = GeminiAdapter().request_body(CONVERSATION, model="gemini-x", stream=False)
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
        for content in body["contents"]:
            types.Content.model_validate_json(json.dumps(content))
        responses = [p["functionResponse"] for p in body["contents"][2]["parts"]]
        assert [r["id"] for r in responses] == ["call_A1", "call_B2"]
        assert responses[0]["response"] == {"output": "hi"}
        assert responses[0]["parts"][0]["inlineData"]["mimeType"] == "image/png"
        assert responses[1]["response"]["error"]["error_type"] == "validation_error"
        assert responses[1]["response"]["error"]["field"] == "count"

    def test_generated_ids_are_not_sent_back_but_signatures_are(self) -> None:
        call = ToolCall("echo", {"text": "a"}, GENERATED_ID_PREFIX + "1")
        request = ModelRequest(
            [
                UserMessage("go"),
                AssistantMessage("", (call,), {call.id: "c2lnbmF0dXJl"}),
                ToolResultsMessage((ToolOutcome(call, CONVERSATION_RESULT),)),
            ]
        )
        contents = GeminiAdapter().contents(request)
        part = contents[1]["parts"][0]
        assert part == {
            "functionCall": {"name": "echo", "args": {"text": "a"}},
            "thoughtSignature": "c2lnbmF0dXJl",
        }
        assert "id" not in contents[2]["parts"][0]["functionResponse"]
        for content in contents:
            types.Content.model_validate_json(json.dumps(content))


CONVERSATION_RESULT = CONVERSATION.messages[2].outcomes[0].result  # type: ignore[union-attr]


def sdk_response(parts: list[dict[str, Any]], usage: bool = True) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ]
    }
    if usage:
        raw["usageMetadata"] = {
            "promptTokenCount": 50,
            "candidatesTokenCount": 8,
            "totalTokenCount": 58,
        }
    response = types.GenerateContentResponse.model_validate(raw)
    return response.model_dump(**DUMP)


class TestResponse:
    def test_calls_without_ids_get_distinct_generated_ids(self) -> None:
        data = sdk_response(
            [
                {"text": "Checking."},
                {"functionCall": {"name": "echo", "args": {"text": "a"}}},
                {
                    "functionCall": {"name": "echo", "args": {"text": "b"}},
                    "thoughtSignature": "AAAA",
                },
                {"functionCall": {"name": "describe", "args": {}, "id": "given-id"}},
            ]
        )
        response = GeminiAdapter().parse_response(data)
        first, second, third = response.message.calls
        assert (first.name, first.arguments) == ("echo", {"text": "a"})
        assert second.arguments == {"text": "b"}
        assert first.id.startswith(GENERATED_ID_PREFIX)
        assert first.id != second.id
        assert third.id == "given-id"
        assert response.message.echo == {second.id: "AAAA"}
        assert response.usage is not None
        assert response.usage.total_tokens == 58


class TestStream:
    @pytest.mark.parametrize("split", [1, 2])
    def test_chunks_accumulate(self, split: int) -> None:
        parts: list[dict[str, Any]] = [
            {"text": "Let me "},
            {"text": "look."},
            {"functionCall": {"name": "echo", "args": {"text": "a"}}},
            {"functionCall": {"name": "echo", "args": {"text": "b"}}},
        ]
        chunks = [sdk_response(parts[i : i + split], usage=False) for i in range(0, 4, split)]
        chunks.append(sdk_response([], usage=True))
        decoder = GeminiAdapter().stream_decoder()
        for chunk in chunks:
            decoder.feed("", chunk)
        response = decoder.finish()
        assert response.message.text == "Let me look."
        assert [c.arguments for c in response.message.calls] == [{"text": "a"}, {"text": "b"}]
        assert response.usage is not None
        assert response.usage.input_tokens == 50
