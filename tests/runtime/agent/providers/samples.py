"""Declarations, conversations and results every adapter test translates."""

from __future__ import annotations

import json
from typing import Any

import pydantic
from toolcage.runtime import FunctionDecl, ToolCall, ToolResult, ToolValidationError
from toolcage.runtime._result import ImageContent, TextContent
from toolcage.runtime.providers import (
    AssistantMessage,
    ModelRequest,
    ToolOutcome,
    ToolResultsMessage,
    UserMessage,
)

from ...sample_tools import describe, echo

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)

AWKWARD = FunctionDecl(
    name="schedule",
    description="Schedule a meeting.",
    parameters={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"Person": {"type": "object", "properties": {"email": {"type": "string"}}}},
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "room": {"type": ["string", "null"], "default": None},
            "host": {"$ref": "#/$defs/Person"},
            "guests": {"type": "array", "items": {"$ref": "#/$defs/Person"}, "maxItems": 9},
            "kind": {"const": "meeting"},
            "uri": {"type": "string", "format": "uri"},
            "size": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "level": {"enum": [1, 2, 3]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["when", "host", "ghost"],
        "additionalProperties": False,
    },
)

DECLS = (echo.schema(), describe.schema(), AWKWARD)

CALLS = (
    ToolCall("echo", {"text": "hi"}, "call_A1"),
    ToolCall("describe", '{"count": 2, "ratio": 0.5}', "call_B2"),
)

FAILED = ToolResult.failure(
    "describe", ToolValidationError("count: Input should be an integer", field="count")
)

CONVERSATION = ModelRequest(
    messages=[
        UserMessage("Say hi and describe things."),
        AssistantMessage("Calling two tools.", CALLS),
        ToolResultsMessage(
            (
                ToolOutcome(
                    CALLS[0],
                    ToolResult(content=(TextContent("hi"), ImageContent(PNG, "image/png"))),
                ),
                ToolOutcome(CALLS[1], FAILED),
            )
        ),
    ],
    tools=DECLS,
    system="Be brief.",
)


def conforms(adapter: pydantic.TypeAdapter[Any], value: Any) -> Any:
    """``value`` validated as an SDK request type, then dumped: what the SDK would send.
    Keys the type does not know are dropped by validation, so equality with ``value``
    proves every key is known and every value has the SDK's type."""
    return json.loads(adapter.dump_json(adapter.validate_python(value), exclude_unset=True))
