"""OpenAI Responses API.

Tools are flat (``{"type": "function", "name", "description", "parameters"}``). A call is an
output item ``{"type": "function_call", "id", "call_id", ...}``: ``call_id`` (not the item
``id``) is what the result's ``function_call_output`` item must name, so it is the id kept
on the :class:`~toolcage.runtime.ToolCall`. Results carry text and images (``input_text`` /
``input_image`` parts); there is no error flag, so a failure's text is its JSON envelope.
Streamed calls arrive as ``response.output_item.added`` then
``response.function_call_arguments.delta`` events keyed by ``output_index``.

Reasoning models emit ``reasoning`` items before the calls they lead to. They go back in the
next request in their place, whole (``id``, ``summary``, ``encrypted_content`` when there
is one), and each ``function_call`` item keeps its item ``id``, so the model keeps its
reasoning across tool rounds. The order of a response's items travels in
:attr:`AssistantMessage.echo` under :data:`ITEMS`. With ``store=False`` the server keeps
nothing, so the adapter asks for each reasoning item's ``encrypted_content``.
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
    ToolOutcome,
    Usage,
    UserMessage,
    arguments_as_text,
    arguments_from_text,
    error_flagged_text,
    new_call_id,
    with_details,
)

ITEMS = "openai_responses_items"
"""The :attr:`AssistantMessage.echo` key of a response's output items, in order: reasoning
items whole, messages as ``{"type": "message"}`` and function calls as ``{"type":
"function_call", "id", "call_id"}`` (their text and arguments are in the message itself)."""


class OpenAIResponsesAdapter:
    """``POST /responses``."""

    name = "openai_responses"

    def __init__(
        self, *, reasoning: Mapping[str, Any] | None = None, store: bool | None = None
    ) -> None:
        self.reasoning = reasoning
        """The request's ``reasoning`` options (``{"effort": "high", "summary": "auto"}``)."""
        self.store = store
        """``False``: the server keeps no response, so reasoning travels encrypted."""

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
                items.extend(_assistant_items(message))
            else:
                items.extend(_output_item(outcome) for outcome in message.outcomes)
        return items

    def request_body(self, request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "input": self.input_items(request)}
        if request.system:
            body["instructions"] = request.system
        if request.tools:
            body["tools"] = self.tool_definitions(request.tools)
        if self.reasoning is not None:
            body["reasoning"] = dict(self.reasoning)
        if self.store is not None:
            body["store"] = self.store
            if not self.store:
                body["include"] = ["reasoning.encrypted_content"]
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
        order: list[Mapping[str, Any]] = []
        for item in data.get("output") or ():
            if item.get("type") == "message":
                text.extend(
                    part.get("text", "")
                    for part in item.get("content") or ()
                    if part.get("type") == "output_text"
                )
                order.append(_MESSAGE)
            elif item.get("type") == "function_call":
                call = _call(item)
                calls.append(call)
                order.append(_call_reference(item, call.id))
            elif item.get("type") == "reasoning":
                order.append(_reasoning(item))
        return ModelResponse(
            _assistant("".join(text), tuple(calls), order),
            _usage(data.get("usage")),
            str(data.get("status") or ""),
        )

    def stream_decoder(self) -> StreamDecoder:
        return _ResponsesStream()


_MESSAGE: Mapping[str, Any] = {"type": "message"}


def _assistant(
    text: str, calls: tuple[ToolCall, ...], order: Sequence[Mapping[str, Any]]
) -> AssistantMessage:
    keep = any(item.get("type") != "message" for item in order)
    return AssistantMessage(text, calls, {ITEMS: tuple(order)} if keep else {})


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    """The input items of an earlier response: in its own order when it is known."""
    text = [{"role": "assistant", "content": message.text}] if message.text else []
    pending = {call.id: call for call in message.calls}
    items: list[dict[str, Any]] = []
    for reference in message.echo.get(ITEMS, ()):
        kind = reference.get("type")
        if kind == "reasoning":
            items.append(dict(reference))
        elif kind == "message":
            items += text
            text = []
        elif kind == "function_call":
            call = pending.pop(reference.get("call_id", ""), None)
            if call is not None:
                items.append(_call_item(call, reference.get("id")))
    items += text
    items.extend(_call_item(call, None) for call in pending.values())
    return items


def _call_item(call: ToolCall, item_id: str | None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call"}
    if item_id:
        item["id"] = item_id
    item.update(call_id=call.id, name=call.name, arguments=arguments_as_text(call))
    return item


def _call_reference(item: Mapping[str, Any], call_id: str) -> Mapping[str, Any]:
    return {"type": "function_call", "id": str(item.get("id") or ""), "call_id": call_id}


def _reasoning(item: Mapping[str, Any]) -> dict[str, Any]:
    """A reasoning item as it goes back: every field the server sent, but no nulls."""
    kept = {key: value for key, value in item.items() if value is not None}
    kept.setdefault("summary", [])
    return kept


def _call(item: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        item.get("name", ""),
        arguments_from_text(item.get("arguments") or ""),
        item.get("call_id") or item.get("id") or new_call_id(),
    )


def _output_item(outcome: ToolOutcome) -> dict[str, Any]:
    images = [b for b in outcome.result.content if isinstance(b, ImageContent)]
    text = with_details(error_flagged_text(outcome), outcome.result)
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
        self.order: dict[int, Mapping[str, Any]] = {}
        """What each output index holds (see :data:`ITEMS`), as the items arrive."""

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        kind = data.get("type") or event
        index = data.get("output_index")
        if kind in ("response.output_item.added", "response.output_item.done"):
            self._item(kind, index, data.get("item") or {})
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

    def _item(self, kind: str, index: Any, item: Mapping[str, Any]) -> None:
        if not isinstance(index, int):
            return
        added = kind == "response.output_item.added"
        if item.get("type") == "function_call" and added:
            call_id = item.get("call_id") or item.get("id") or ""
            self.calls.start(index, call_id, item.get("name", ""))
            if item.get("arguments"):
                self.calls.delta(index, item["arguments"])
            self.order[index] = _call_reference(item, call_id)
        elif item.get("type") == "message":
            self.order[index] = _MESSAGE
        elif item.get("type") == "reasoning":
            self.order[index] = _reasoning(item)  # the done item is the whole one

    def finish(self) -> ModelResponse:
        calls = self.calls.finish()
        order = [self.order[index] for index in sorted(self.order)]
        # A call the accumulator gave a fresh id to is matched by that id, not the item's.
        given = {reference.get("call_id") for reference in order}
        for call in calls:
            if call.id not in given:
                order.append({"type": "function_call", "id": "", "call_id": call.id})
        return ModelResponse(_assistant("".join(self.text), calls, order), self.usage, self.status)
