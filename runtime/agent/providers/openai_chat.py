"""OpenAI Chat Completions (and every server that speaks it: vLLM, llama.cpp, Ollama, ...).

Tools are ``{"type": "function", "function": decl}``; calls arrive in
``message.tool_calls`` with arguments as JSON text; each result is a ``role: "tool"``
message keyed by ``tool_call_id``. A tool message carries text only, so images a tool
returned follow in one user message after the tool messages. Chat Completions has no error
flag: a failed call's text is its JSON error envelope. Streamed calls arrive as
``delta.tool_calls[]`` fragments keyed by ``index``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._result import ImageContent
from ..._tool import FunctionDecl, ToolCall
from .._accumulator import ToolCallAccumulator
from .base import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    StreamDecoder,
    ToolResultsMessage,
    Usage,
    UserMessage,
    arguments_as_text,
    arguments_from_text,
    error_flagged_text,
    new_call_id,
    with_details,
)


class OpenAIChatAdapter:
    """``POST /chat/completions``."""

    name = "openai_chat"

    def tool_definitions(self, tools: Sequence[FunctionDecl]) -> list[dict[str, Any]]:
        return [{"type": "function", "function": decl.to_dict()} for decl in tools]

    def messages(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if request.system:
            out.append({"role": "system", "content": request.system})
        for message in request.messages:
            if isinstance(message, UserMessage):
                out.append({"role": "user", "content": message.text})
            elif isinstance(message, AssistantMessage):
                item: dict[str, Any] = {"role": "assistant", "content": message.text or None}
                if message.calls:
                    item["tool_calls"] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": arguments_as_text(call)},
                        }
                        for call in message.calls
                    ]
                out.append(item)
            else:
                out.extend(self._results(message))
        return out

    def _results(self, message: ToolResultsMessage) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        for outcome in message.outcomes:
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": outcome.call.id,
                    "content": with_details(error_flagged_text(outcome), outcome.result),
                }
            )
            for block in outcome.result.content:
                if isinstance(block, ImageContent):
                    url = f"data:{block.mime_type};base64,{block.base64()}"
                    images.append({"type": "image_url", "image_url": {"url": url}})
        if images:
            note = {"type": "text", "text": "Images returned by the tool calls above:"}
            out.append({"role": "user", "content": [note, *images]})
        return out

    def request_body(self, request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": self.messages(request)}
        if request.tools:
            body["tools"] = self.tool_definitions(request.tools)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def endpoint(self, *, model: str, stream: bool) -> str:
        return "/chat/completions"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"}

    def parse_response(self, data: Mapping[str, Any]) -> ModelResponse:
        choice = (data.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        calls = tuple(
            ToolCall(
                fn.get("name", ""),
                arguments_from_text(fn.get("arguments") or ""),
                item.get("id") or new_call_id(),
            )
            for item in message.get("tool_calls") or ()
            if (fn := item.get("function")) is not None
        )
        return ModelResponse(
            AssistantMessage(message.get("content") or "", calls),
            _usage(data.get("usage")),
            choice.get("finish_reason") or "",
        )

    def stream_decoder(self) -> StreamDecoder:
        return _ChatStream()


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0))


class _ChatStream:
    """``chat.completion.chunk`` events; a call's fragments share its ``index``."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls = ToolCallAccumulator()
        self.keys: dict[int, tuple[int, int]] = {}
        """The accumulator key of the call now receiving fragments at each index."""
        self.ids: dict[tuple[int, int], str] = {}
        self.usage: Usage | None = None
        self.finish_reason = ""

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        if (usage := _usage(data.get("usage"))) is not None:
            self.usage = usage
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            if content := delta.get("content"):
                self.text.append(content)
            for fragment in delta.get("tool_calls") or ():
                self._fragment(fragment)
            if reason := choice.get("finish_reason"):
                self.finish_reason = reason

    def _fragment(self, fragment: Mapping[str, Any]) -> None:
        """Fragments are keyed by ``index``; a fragment with a new ``id`` at an index already
        in use starts another call (servers that send every call at index 0 do that)."""
        index = int(fragment.get("index", 0))
        fn = fragment.get("function") or {}
        call_id = fragment.get("id") or ""
        key = self.keys.get(index)
        if key is None or (call_id and call_id != self.ids.get(key)):
            key = (index, len(self.calls))
            self.keys[index] = key
            self.ids[key] = call_id
            self.calls.start(key, call_id, fn.get("name") or "")
        elif fn.get("name"):
            self.calls.rename(key, fn["name"])
        if fn.get("arguments"):
            self.calls.delta(key, fn["arguments"])

    def finish(self) -> ModelResponse:
        return ModelResponse(
            AssistantMessage("".join(self.text), self.calls.finish()),
            self.usage,
            self.finish_reason,
        )
