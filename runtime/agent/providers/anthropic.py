"""Anthropic Messages API.

Tools are ``{"name", "description", "input_schema"}``; calls are ``tool_use`` content blocks
with an ``id`` and an ``input`` object; results are ``tool_result`` blocks (text and base64
image content, the details as a last text block, ``is_error``) that go back together in one
user message. Streamed calls arrive as ``content_block_start`` (``tool_use``),
``input_json_delta`` fragments and ``content_block_stop``, keyed by the content-block index.

Extended thinking (``thinking_budget``): the model's ``thinking`` and ``redacted_thinking``
blocks must go back unchanged, signatures included, at the head of the assistant message
whose tool calls they led to; they travel in :attr:`AssistantMessage.echo` under
:data:`THINKING`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._result import ImageContent, TextContent
from ..._tool import FunctionDecl, ToolCall
from .._accumulator import ToolCallAccumulator
from .base import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StreamDecoder,
    ToolOutcome,
    Usage,
    UserMessage,
    arguments_from_text,
    details_text,
    new_call_id,
)

API_VERSION = "2023-06-01"
THINKING = "anthropic_thinking"
"""The :attr:`AssistantMessage.echo` key of a message's thinking blocks."""
_THINKING_TYPES = ("thinking", "redacted_thinking")


class AnthropicAdapter:
    """``POST /v1/messages``."""

    name = "anthropic"

    def __init__(self, max_tokens: int = 4096, thinking_budget: int | None = None) -> None:
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        """Tokens the model may think for (extended thinking); ``None``: off."""

    def tool_definitions(self, tools: Sequence[FunctionDecl]) -> list[dict[str, Any]]:
        return [
            {"name": d.name, "description": d.description, "input_schema": dict(d.parameters)}
            for d in tools
        ]

    def messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in request.messages:
            if isinstance(message, UserMessage):
                out.append({"role": "user", "content": message.text})
            elif isinstance(message, AssistantMessage):
                blocks: list[dict[str, Any]] = [dict(b) for b in message.echo.get(THINKING, ())]
                if message.text:
                    blocks.append({"type": "text", "text": message.text})
                blocks.extend(
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": _input(c)}
                    for c in message.calls
                )
                out.append({"role": "assistant", "content": blocks})
            else:
                out.append(
                    {"role": "user", "content": [_result_block(o) for o in message.outcomes]}
                )
        return out

    def request_body(self, request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": self.max_tokens,
            "messages": self.messages(request),
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = self.tool_definitions(request.tools)
        if self.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if stream:
            body["stream"] = True
        return body

    def endpoint(self, *, model: str, stream: bool) -> str:
        return "/v1/messages"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": API_VERSION}

    def parse_response(self, data: Mapping[str, Any]) -> ModelResponse:
        text: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[Mapping[str, Any]] = []
        for block in data.get("content") or ():
            if block.get("type") in _THINKING_TYPES:
                thinking.append(block)
            elif block.get("type") == "text":
                text.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                raw = block.get("input")
                arguments: Mapping[str, Any] | str = (
                    dict(raw) if isinstance(raw, Mapping) else arguments_from_text(str(raw or ""))
                )
                call_id = block.get("id") or new_call_id("toolu_")
                calls.append(ToolCall(block.get("name", ""), arguments, call_id))
        return ModelResponse(
            _assistant("".join(text), tuple(calls), thinking),
            _usage(data.get("usage")),
            str(data.get("stop_reason") or ""),
        )

    def stream_decoder(self) -> StreamDecoder:
        return _AnthropicStream()


def _assistant(
    text: str, calls: tuple[ToolCall, ...], thinking: Sequence[Mapping[str, Any]]
) -> AssistantMessage:
    echo = {THINKING: tuple(thinking)} if thinking else {}
    return AssistantMessage(text, calls, echo)


def _input(call: ToolCall) -> Any:
    """A ``tool_use`` input must be an object; JSON text that was not one is sent as the
    object ``{"_raw": text}`` so the conversation stays valid."""
    if isinstance(call.arguments, str):
        value = arguments_from_text(call.arguments)
        return dict(value) if isinstance(value, Mapping) else {"_raw": call.arguments}
    return dict(call.arguments)


def _result_block(outcome: ToolOutcome) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for block in outcome.result.content:
        if isinstance(block, TextContent):
            if block.text:
                content.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            source = {"type": "base64", "media_type": block.mime_type, "data": block.base64()}
            content.append({"type": "image", "source": source})
    if details := details_text(outcome.result):
        content.append({"type": "text", "text": details})
    block_out: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": outcome.call.id,
        "content": content,
    }
    if outcome.result.is_error:
        block_out["is_error"] = True
    return block_out


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    inputs = sum(
        int(raw.get(k) or 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return Usage(inputs, int(raw.get("output_tokens") or 0))


class _AnthropicStream:
    """``message_start`` … ``content_block_*`` … ``message_delta`` / ``message_stop``."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls = ToolCallAccumulator("toolu_")
        self.thinking: dict[int, dict[str, Any]] = {}
        """Thinking blocks by content index, as they build up."""
        self.input_tokens = 0
        self.output_tokens = 0
        self.reported = False
        self.stop_reason = ""

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        kind = data.get("type") or event
        index = data.get("index")
        if kind == "message_start":
            self._count((data.get("message") or {}).get("usage"))
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "tool_use":
                raw = block.get("input")
                self.calls.start(
                    index,
                    block.get("id") or "",
                    block.get("name", ""),
                    raw if isinstance(raw, Mapping) else None,
                )
            elif block.get("type") == "text" and block.get("text"):
                self.text.append(block["text"])
            elif block.get("type") in _THINKING_TYPES and isinstance(index, int):
                self.thinking[index] = dict(block)
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "input_json_delta" and index in self.calls:
                self.calls.delta(index, delta.get("partial_json") or "")
            elif (
                delta.get("type") in ("thinking_delta", "signature_delta")
                and isinstance(index, int)
                and (block := self.thinking.get(index)) is not None
            ):
                field = delta["type"].removesuffix("_delta")
                block[field] = block.get(field, "") + (delta.get(field) or "")
            elif delta.get("type") == "text_delta":
                self.text.append(delta.get("text") or "")
        elif kind == "content_block_stop" and index in self.calls:
            self.calls.end(index)
        elif kind == "message_delta":
            self.stop_reason = str((data.get("delta") or {}).get("stop_reason") or "")
            self._count(data.get("usage"))

    def _count(self, raw: Any) -> None:
        """``message_start`` reports the input, ``message_delta`` the cumulative output."""
        usage = _usage(raw)
        if usage is None:
            return
        self.reported = True
        self.input_tokens = max(self.input_tokens, usage.input_tokens)
        self.output_tokens = max(self.output_tokens, usage.output_tokens)

    def finish(self) -> ModelResponse:
        usage = Usage(self.input_tokens, self.output_tokens) if self.reported else None
        thinking = [self.thinking[i] for i in sorted(self.thinking)]
        message = _assistant("".join(self.text), self.calls.finish(), thinking)
        return ModelResponse(message, usage, self.stop_reason)
