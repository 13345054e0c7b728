"""Google Gemini ``generateContent`` (the Generative Language REST API).

Tools are ``{"functionDeclarations": [...]}`` whose ``parameters`` use Gemini's OpenAPI
subset of JSON Schema, so :func:`gemini_schema` rewrites a declaration's schema: upper-case
``type``, ``null`` in a type list or an ``anyOf`` becomes ``nullable``, ``const`` becomes a
one-value ``enum``, ``$ref`` is inlined, and keywords Gemini rejects (``additionalProperties``,
``default``, ``$schema``, ``title``, ``examples``, unsupported ``format`` values, ...) are
dropped -- validation still happens against the full schema in the pipeline.

Calls are ``functionCall`` parts with an ``args`` object and, usually, no id: one is made up,
and sent back in the ``functionResponse`` only when Gemini gave it. Results are
``functionResponse`` parts (``{"output": text}``, with ``"details"`` when the result has
them, or ``{"error": envelope}``, with the
result's ``finished_at`` beside; images as ``inlineData`` parts). A ``thoughtSignature`` on
a call's part is echoed back with it, as Gemini requires. Streamed responses are whole
``GenerateContentResponse`` chunks, each function call complete within one chunk.
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
    arguments_from_text,
    details_text,
    error_flagged_text,
)

GENERATED_ID_PREFIX = "gemini_call_"
"""Prefix of ids made up for calls Gemini sent without one (never sent back)."""

_KEPT = ("description", "minItems", "maxItems", "minLength", "maxLength", "pattern", "minimum",
         "maximum", "minProperties", "maxProperties", "propertyOrdering")  # fmt: skip
"""Keywords Gemini takes as they are (a tuple: the output's key order stays stable, which
keeps request prefixes cacheable)."""
_FORMATS = {"STRING": {"enum", "date-time"}, "NUMBER": {"float", "double"},
            "INTEGER": {"int32", "int64"}}  # fmt: skip


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema in Gemini's subset (see the module docstring)."""
    defs: Mapping[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}
    return _convert(schema, defs, frozenset())


def _convert(
    node: Mapping[str, Any], defs: Mapping[str, Any], seen: frozenset[str]
) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        key = ref.rsplit("/", 1)[-1]
        if key in seen or key not in defs:
            return {"type": "OBJECT"}  # recursion Gemini cannot express
        merged = {**defs[key], **{k: v for k, v in node.items() if k != "$ref"}}
        return _convert(merged, defs, seen | {key})
    parts = node.get("allOf")
    if isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], Mapping):
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _convert({**parts[0], **rest}, defs, seen)
    out: dict[str, Any] = {k: node[k] for k in _KEPT if k in node}
    nullable = node.get("nullable") is True
    alternatives = node.get("anyOf", node.get("oneOf"))
    if isinstance(alternatives, list):
        options = [a for a in alternatives if isinstance(a, Mapping) and a.get("type") != "null"]
        nullable = nullable or len(options) < len(alternatives)
        if len(options) == 1:
            inner = _convert(options[0], defs, seen)
            out = {**inner, **out}
        elif options:
            out["anyOf"] = [_convert(o, defs, seen) for o in options]
    declared = node.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    if "null" in types:
        nullable = True
        types.remove("null")
    if len(types) == 1:
        out["type"] = str(types[0]).upper()
    elif len(types) > 1:
        out["anyOf"] = [_convert({**node, "type": t}, defs, seen) for t in types]
    if "const" in node:
        node = {**node, "enum": [node["const"]]}
    if isinstance(node.get("enum"), list):
        values = node["enum"]
        if all(isinstance(v, str) for v in values):
            out["enum"] = list(values)
            out.setdefault("type", "STRING")
        elif values:  # Gemini takes string enums only: say it instead
            if "type" not in out and all(type(v) is int for v in values):
                out["type"] = "INTEGER"
            elif "type" not in out and all(isinstance(v, int | float) for v in values):
                out["type"] = "NUMBER"
            allowed = ", ".join(repr(v) for v in values)
            out["description"] = f"{out.get('description', '')} One of: {allowed}.".strip()
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS.get(out.get("type", ""), ()):
        out["format"] = fmt
    if isinstance(node.get("properties"), Mapping) and node["properties"]:
        out["properties"] = {
            name: _convert(prop, defs, seen) for name, prop in node["properties"].items()
        }
        out.setdefault("type", "OBJECT")
        required = [r for r in node.get("required", ()) if r in node["properties"]]
        if required:
            out["required"] = required
    if isinstance(node.get("items"), Mapping):
        out["items"] = _convert(node["items"], defs, seen)
        out.setdefault("type", "ARRAY")
    if nullable:
        out["nullable"] = True
    return out


class GeminiAdapter:
    """``POST /v1beta/models/{model}:generateContent`` (``:streamGenerateContent?alt=sse``)."""

    name = "gemini"

    def tool_definitions(self, tools: Sequence[FunctionDecl]) -> list[dict[str, Any]]:
        declarations = []
        for decl in tools:
            item: dict[str, Any] = {"name": decl.name, "description": decl.description}
            parameters = gemini_schema(decl.parameters)
            if parameters.get("properties"):
                item["parameters"] = parameters
            declarations.append(item)
        return [{"functionDeclarations": declarations}] if declarations else []

    def contents(self, request: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in request.messages:
            if isinstance(message, UserMessage):
                out.append({"role": "user", "parts": [{"text": message.text}]})
            elif isinstance(message, AssistantMessage):
                parts: list[dict[str, Any]] = []
                if message.text:
                    parts.append({"text": message.text})
                for call in message.calls:
                    parts.append(_call_part(call, message.echo.get(call.id)))
                out.append({"role": "model", "parts": parts})
            else:
                out.append({"role": "user", "parts": [_response_part(o) for o in message.outcomes]})
        return out

    def request_body(self, request: ModelRequest, *, model: str, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"contents": self.contents(request)}
        if request.system:
            body["systemInstruction"] = {"parts": [{"text": request.system}]}
        if request.tools:
            body["tools"] = self.tool_definitions(request.tools)
        return body

    def endpoint(self, *, model: str, stream: bool) -> str:
        if stream:
            return f"/v1beta/models/{model}:streamGenerateContent?alt=sse"
        return f"/v1beta/models/{model}:generateContent"

    def auth_headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def parse_response(self, data: Mapping[str, Any]) -> ModelResponse:
        decoder = _GeminiStream()
        decoder.feed("", data)
        return decoder.finish()

    def stream_decoder(self) -> StreamDecoder:
        return _GeminiStream()


def _call_part(call: ToolCall, signature: Any) -> dict[str, Any]:
    args = call.arguments
    if isinstance(args, str):
        decoded = arguments_from_text(args)
        args = decoded if isinstance(decoded, Mapping) else {"_raw": args}
    function_call: dict[str, Any] = {"name": call.name, "args": dict(args)}
    if call.id and not call.id.startswith(GENERATED_ID_PREFIX):
        function_call["id"] = call.id
    part: dict[str, Any] = {"functionCall": function_call}
    if isinstance(signature, str):
        part["thoughtSignature"] = signature
    return part


def _response_part(outcome: ToolOutcome) -> dict[str, Any]:
    result = outcome.result
    response: dict[str, Any]
    if result.is_error and result.error is not None:
        envelope = result.error.envelope(result.tool or outcome.call.name)
        envelope["message"] = result.output_text or envelope["message"]
        response = {"error": envelope}
    else:
        response = {"output": error_flagged_text(outcome)}
        if details_text(result):
            response["details"] = result.details
    if outcome.finished_at:
        response["finished_at"] = outcome.finished_at
    function_response: dict[str, Any] = {"name": outcome.call.name, "response": response}
    if outcome.call.id and not outcome.call.id.startswith(GENERATED_ID_PREFIX):
        function_response["id"] = outcome.call.id
    images = [
        {"inlineData": {"mimeType": b.mime_type, "data": b.base64()}}
        for b in result.content
        if isinstance(b, ImageContent)
    ]
    if images:
        function_response["parts"] = images
    return {"functionResponse": function_response}


class _GeminiStream:
    """Each event is a ``GenerateContentResponse``; parts accumulate across chunks."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls = ToolCallAccumulator(GENERATED_ID_PREFIX)
        self.echo: dict[str, Any] = {}
        self.usage: Usage | None = None
        self.finish_reason = ""

    def feed(self, event: str, data: Mapping[str, Any]) -> None:
        for candidate in (data.get("candidates") or ())[:1]:
            for part in (candidate.get("content") or {}).get("parts") or ():
                if (call := part.get("functionCall")) is not None:
                    key = len(self.calls)
                    args = call.get("args")
                    self.calls.start(
                        key,
                        call.get("id") or "",
                        call.get("name", ""),
                        args if isinstance(args, Mapping) else {},
                    )
                    self.calls.end(key)
                    if signature := part.get("thoughtSignature"):
                        self.echo[self.calls.finish()[key].id] = signature
                elif isinstance(part.get("text"), str) and not part.get("thought"):
                    self.text.append(part["text"])
            if reason := candidate.get("finishReason"):
                self.finish_reason = str(reason)
        meta = data.get("usageMetadata")
        if isinstance(meta, Mapping):
            self.usage = Usage(
                int(meta.get("promptTokenCount") or 0),
                int(meta.get("candidatesTokenCount") or 0)
                + int(meta.get("thoughtsTokenCount") or 0),
            )

    def finish(self) -> ModelResponse:
        return ModelResponse(
            AssistantMessage("".join(self.text), self.calls.finish(), dict(self.echo)),
            self.usage,
            self.finish_reason,
        )
