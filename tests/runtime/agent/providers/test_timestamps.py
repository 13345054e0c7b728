"""Result timestamps on the wire: Gemini's ``functionResponse`` carries ``finished_at``,
the other formats carry it in an error's envelope; every body still validates as the
official SDK's types."""

from __future__ import annotations

import dataclasses
import json

import pydantic
from anthropic.types import MessageParam
from google.genai import types
from toolcage.runtime.providers import (
    AnthropicAdapter,
    GeminiAdapter,
    ModelRequest,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ToolOutcome,
    ToolResultsMessage,
)

from .samples import CONVERSATION, conforms
from .test_anthropic import check_block
from .test_openai_chat import ROLES
from .test_openai_responses import ITEM_TYPES

STAMPS = ("2026-01-31T12:00:00.125Z", "2026-01-31T12:00:01.250Z")


def stamped() -> ModelRequest:
    *head, results = CONVERSATION.messages
    assert isinstance(results, ToolResultsMessage)
    outcomes = tuple(
        dataclasses.replace(outcome, finished_at=stamp)
        for outcome, stamp in zip(results.outcomes, STAMPS, strict=True)
    )
    return dataclasses.replace(CONVERSATION, messages=[*head, ToolResultsMessage(outcomes)])


def test_outcomes_default_to_no_timestamp() -> None:
    results = CONVERSATION.messages[-1]
    assert isinstance(results, ToolResultsMessage)
    first = results.outcomes[0]
    assert ToolOutcome(first.call, first.result).finished_at == ""


class TestStampedResults:
    def test_gemini_sends_finished_at_in_each_function_response(self) -> None:
        body = GeminiAdapter().request_body(stamped(), model="gemini-x", stream=False)
        for content in body["contents"]:
            types.Content.model_validate_json(json.dumps(content))
        responses = [p["functionResponse"]["response"] for p in body["contents"][2]["parts"]]
        assert [r["finished_at"] for r in responses] == list(STAMPS)
        assert responses[0]["output"] == "hi"

    def test_openai_chat_sends_it_in_the_error_envelope(self) -> None:
        body = OpenAIChatAdapter().request_body(stamped(), model="gpt-x", stream=False)
        for message in body["messages"]:
            adapter = pydantic.TypeAdapter(ROLES[message["role"]])
            assert conforms(adapter, message) == message
        tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
        assert json.loads(tool_messages[1]["content"])["finished_at"] == STAMPS[1]

    def test_openai_responses_sends_it_in_the_error_envelope(self) -> None:
        body = OpenAIResponsesAdapter().request_body(stamped(), model="m", stream=False)
        for item in body["input"]:
            adapter = pydantic.TypeAdapter(ITEM_TYPES[item.get("type")])
            assert conforms(adapter, item) == item
        outputs = [i for i in body["input"] if i.get("type") == "function_call_output"]
        assert json.loads(outputs[1]["output"])["finished_at"] == STAMPS[1]

    def test_anthropic_bodies_still_validate(self) -> None:
        body = AnthropicAdapter().request_body(stamped(), model="claude", stream=False)
        adapter = pydantic.TypeAdapter(MessageParam)
        for message in body["messages"]:
            adapter.validate_python(message)
            if isinstance(message["content"], list):
                for block in message["content"]:
                    check_block(block)
