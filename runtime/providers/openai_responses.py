"""OpenAI Responses API.

Tools are flat (``{"type": "function", "name", "description", "parameters"}``). A call is an
output item ``{"type": "function_call", "id", "call_id", ...}``: ``call_id`` (not the item
``id``) is what the result's ``function_call_output`` item must name, so it is the id kept
on the :class:`~toolcage.runtime.ToolCall`. Results carry text and images (``input_text`` /
``input_image`` parts); there is no error flag, so a failure's text is its JSON envelope.
Streamed calls arrive as ``response.output_item.added`` then
``response.function_call_arguments.delta`` events keyed by ``output_index``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._accumulator import ToolCallAccumulator
from .._result import ImageContent
from .._tool import FunctionDecl, ToolCall
from .base import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StreamDecoder,
    ToolOutcome,
    Usage,
    UserMessage,
    arguments_as_text,
    arguments_from_text,
    error_flagged_text,
    new_call_id,
)


class OpenAIResponsesAdapter:
    """``POST /responses``."""

    name = "openai_responses"

    def tool_definitions(self, tools: Sequence[FunctionDecl]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "name": decl.name,
                "description": decl.description,
                "parameters": dict(decl.parameters),
                "strict": False,
            }
            for decl in tools
        ]

    def input_items(self, request: ModelRequest) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for message in request.messages:
            if isinstance(message, UserMessage):
                items.append({"role": "user", "content": message.text})
            elif isinstance(message, AssistantMessage):
                if message.text:
                    items.append({"role": "assistant", "content": message.text})
                items.extend(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": arguments_as_text(call),
                    }
                    for call in message.calls
                )
            else:
                items.extend(_output_item(outcome) for outcome in message.outcomes)
        return items

    def request_body(self, request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "input": self.input_items(request)}
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = self.tool_definitions(request.tools)
        if stream:
            body["stream"] = True
        return body

    def endpoint(self, *, model: str, stream: bool) -> str:
        return "/responses"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"}

    def parse_response(self, data: Mapping[str, Any]) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        for item in data.get("output") or ():
            if item.get("type") == "message":
                text.extend(
                    part.get("text", "")
                    for part in item.get("content") or ()
                    if part.get("type") == "output_text"
                )
            elif item.get("type") == "function_call":
                calls.append(_call(item))
        return ModelResponse(
            AssistantMessage("".join(text), tuple(calls)),
            _usage(data.get("usage")),
            str(data.get("status") or ""),
        )

    def stream_decoder(self) -> StreamDecoder:
        return _ResponsesStream()


def _call(item: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        item.get("name", ""),
        arguments_from_text(item.get("arguments") or ""),
        item.get("call_id") or item.get("id") or new_call_id(),
    )


def _output_item(outcome: ToolOutcome) -> dict[str, Any]:
    images = [b for b in outcome.result.content if isinstance(b, ImageContent)]
    text = error_flagged_text(outcome)
    output: str | list[dict[str, Any]] = text
    if images:
        output = [{"type": "input_text", "text": text}] if text else []
        output.extend(
            {
                "type": "input_image",
                "image_url": f"data:{b.mime_type};base64,{b.base64()}",
                "detail": "auto",
            }
            for b in images
        )
    return {"type": "function_call_output", "call_id": outcome.call.id, "output": output}


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    return Usage(int(raw.get("input_tokens") or 0), int(raw.get("output_tokens") or 0))


class _ResponsesStream:
    """Semantic events (``event:`` equals the data's ``type``)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls = ToolCallAccumulator()
        self.usage: Usage | None = None
        self.status = ""

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        kind = data.get("type") or event
        index = data.get("output_index")
        if kind == "response.output_item.added":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                call_id = item.get("call_id") or item.get("id") or ""
                self.calls.start(index, call_id, item.get("name", ""))
                if item.get("arguments"):
                    self.calls.delta(index, item["arguments"])
        elif kind == "response.function_call_arguments.delta" and index in self.calls:
            self.calls.delta(index, data.get("delta") or "")
        elif kind == "response.function_call_arguments.done" and index in self.calls:
            self.calls.end(index, data.get("arguments"))
        elif kind == "response.output_text.delta":
            self.text.append(data.get("delta") or "")
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            response = data.get("response") or {}
            self.usage = _usage(response.get("usage")) or self.usage
            self.status = str(response.get("status") or "")

    def finish(self) -> ModelResponse:
        return ModelResponse(
            AssistantMessage("".join(self.text), self.calls.finish()), self.usage, self.status
        )
