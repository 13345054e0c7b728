"""The seam between the agent loop and a model provider's wire format.

A conversation is kept in provider-neutral messages (:class:`UserMessage`,
:class:`AssistantMessage`, :class:`ToolResultsMessage`); an adapter (one per wire format)
turns them and the tools' :class:`~toolcage.runtime.FunctionDecl` into a request body, and a
response -- whole, or streamed as server-sent events -- back into an
:class:`AssistantMessage` with its :class:`~toolcage.runtime.ToolCall` list and token
:class:`Usage`. Adapters are pure translation: no I/O, no runner, no pipeline.

A successful result reaches the model as its text and, when it has them, its ``details``
(:func:`details_text`: a separate block where the format has blocks, a line after the text
where it has only a string, a member of Gemini's response object); its ``display`` is for
people and never sent. The ``[details]`` line is one of the pipeline's own lines: a tool's
text never holds one unescaped (see :mod:`toolcage.runtime._markers`), and the JSON on it
is one line, with U+0085, U+2028 and U+2029 escaped too.

Tool-call ids survive the round trip: the id a provider gave a call is the id its result
carries back. Where a provider gives none (Gemini), the adapter makes one, and encodes it back
only where the provider accepts it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..._markers import DETAILS
from ..._result import ToolResult
from ..._tool import FunctionDecl, ToolCall


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model response cost, as the provider reported them."""

    input_tokens: int = 0
    """Prompt tokens (including cached ones)."""
    output_tokens: int = 0
    """Generated tokens."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens
        )


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user said."""

    text: str
    """The user's words."""


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """What the model answered: text, tool calls, or both."""

    text: str = ""
    """The model's prose (may be empty when it only calls tools)."""
    calls: tuple[ToolCall, ...] = ()
    """The tool calls, in the order the model made them; each has an id."""
    echo: Mapping[str, Any] = field(default_factory=dict)
    """Provider data that must go back verbatim with this message: Gemini's
    ``thoughtSignature`` keyed by call id, Anthropic's thinking blocks under
    ``anthropic_thinking``; adapters ignore what is not theirs."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call's result, as it goes back to the model."""

    call: ToolCall
    """The call this answers (its id and name are what the provider matches on)."""
    result: ToolResult
    """What the tool returned; ``is_error`` is encoded where the provider has a flag."""
    finished_at: str = ""
    """When the result was ready, ISO 8601 UTC (``2026-01-31T12:00:00.000Z``; set by the
    agent loop). Gemini's ``functionResponse`` carries it; elsewhere an error envelope does,
    as ``finished_at``."""


@dataclass(frozen=True, slots=True)
class ToolResultsMessage:
    """The results of every call of the preceding assistant message, in call order."""

    outcomes: tuple[ToolOutcome, ...]
    """One per call."""


Message = UserMessage | AssistantMessage | ToolResultsMessage


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One model response, decoded."""

    message: AssistantMessage
    """The answer."""
    usage: Usage | None = None
    """Tokens, when the provider reported them."""
    stop_reason: str = ""
    """The provider's own word for why it stopped (``tool_use``, ``stop``, ...)."""


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything one model call needs, provider-neutral."""

    messages: Sequence[Message]
    """The conversation so far."""
    tools: Sequence[FunctionDecl] = ()
    """The tools the model may call."""
    system: str = ""
    """System instructions, if any."""


class StreamDecoder(Protocol):
    """Decodes one streamed response, event by event."""

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        """One server-sent event: its ``event:`` name (may be empty) and its JSON data."""
        ...

    def finish(self) -> ModelResponse:
        """The response, once the stream has ended."""
        ...


class ProviderAdapter(Protocol):
    """Translates to and from one provider's wire format."""

    name: str
    """Short name (``openai_chat``, ``openai_responses``, ``anthropic``, ``gemini``)."""

    def tool_definitions(self, tools: Sequence[FunctionDecl]) -> list[dict[str, Any]]:
        """The request's tool list."""
        ...

    def request_body(self, request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
        """The JSON body of a request."""
        ...

    def endpoint(self, *, model: str, stream: bool) -> str:
        """Path (and query) under the base URL."""
        ...

    def auth_headers(self, api_key: str) -> dict[str, str]:
        """Headers that carry the key (and any required version header)."""
        ...

    def parse_response(self, data: Mapping[str, Any]) -> ModelResponse:
        """A whole (non-streamed) response body."""
        ...

    def stream_decoder(self) -> StreamDecoder:
        """A fresh decoder for one streamed response."""
        ...


def new_call_id(prefix: str = "call_") -> str:
    """An id for a call whose provider gave it none."""
    return prefix + secrets.token_hex(12)


def error_flagged_text(outcome: ToolOutcome) -> str:
    """The result's text, for providers without an ``is_error`` flag: errors are sent as the
    JSON envelope, so the model can tell a failure from an output."""
    result = outcome.result
    if result.is_error:
        envelope = result.error.envelope(result.tool or outcome.call.name) if result.error else {}
        if not envelope:
            return result.output_text
        text = result.output_text
        if text and text != envelope.get("message"):
            envelope["message"] = text
        if outcome.finished_at:
            envelope["finished_at"] = outcome.finished_at
        return json.dumps(envelope, ensure_ascii=False)
    return result.output_text


def details_text(result: ToolResult) -> str:
    """The details of a successful result as the model reads them, ``[details] {...}``; ""
    when it has none, when they are not JSON, or when the text already is their JSON (a
    ``@tool`` function's return value, an MCP tool's structured content)."""
    if result.details is None or result.is_error:
        return ""
    try:
        encoded = json.dumps(result.details, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return ""
    text = result.output_text
    if encoded == text or _is_json_of(text, result.details):
        return ""
    if not encoded.isascii():  # breaks json.dumps leaves in strings: the line stays one
        encoded = encoded.translate(_LINE_BREAKS)
    return f"{DETAILS} {encoded}"


_LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
"""Line breaks that JSON allows raw in a string, as their escapes (the same value)."""


def _is_json_of(text: str, value: Any) -> bool:
    """Whether ``text`` is ``value`` as JSON, in any layout."""
    if not isinstance(value, dict | list) or text.lstrip()[:1] not in ("{", "["):
        return False
    try:
        return bool(json.loads(text) == value)
    except (ValueError, RecursionError):
        return False


def with_details(text: str, result: ToolResult) -> str:
    """``text`` followed by the result's :func:`details_text` on a line of its own."""
    extra = details_text(result)
    if not extra:
        return text
    return f"{text}\n{extra}" if text else extra


def arguments_from_text(text: str) -> Mapping[str, Any] | str:
    """Arguments sent as JSON text: the object, or the text itself when it is not a JSON
    object (the pipeline then answers the call with a ``validation_error``)."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def arguments_as_text(call: ToolCall) -> str:
    """A call's arguments as the JSON text providers echo back."""
    if isinstance(call.arguments, str):
        return call.arguments
    return json.dumps(dict(call.arguments), ensure_ascii=False)
