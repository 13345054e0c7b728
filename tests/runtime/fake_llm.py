"""A scripted model behind a real HTTP server on 127.0.0.1, speaking each provider's wire
format (JSON responses and server-sent event streams) the way the real APIs do.

Each request gets the next :class:`Reply` of the script; requests are recorded so tests can
check what the loop sent back (tool results, ids, retry feedback).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

PROVIDERS = ("openai_chat", "openai_responses", "anthropic", "gemini")
API_KEY = "test-key-123"
MODEL = "model-x"


@dataclass(frozen=True)
class Reply:
    """One model response: optional text and tool calls ``(id, name, arguments JSON)``."""

    text: str = ""
    calls: Sequence[tuple[str, str, str]] = ()
    stall: float = 0.0
    """Seconds the server waits before the body (streams: after the first event)."""
    status: int = 200
    """Another status answers with the provider's error body instead."""
    retry_after: str | None = None
    """The ``Retry-After`` header sent with an error status."""
    reasoning: str = ""
    """OpenAI Responses: a reasoning item (with this summary) before the other items."""


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


@dataclass
class FakeModel:
    provider: str
    stream: bool
    script: list[Reply]
    requests: list[Recorded] = field(default_factory=list)
    base_url: str = ""
    requested: threading.Event = field(default_factory=threading.Event)
    """Set when the first request arrives."""

    def next_reply(self) -> Reply:
        index = len(self.requests) - 1
        return self.script[index] if index < len(self.script) else Reply("done")


def _usage(round_no: int) -> tuple[int, int]:
    return 100 + round_no, 7


def _split(text: str) -> list[str]:
    """Argument JSON cut in three, mid-token, the way streams deliver it."""
    third = max(1, len(text) // 3)
    return [p for p in (text[:third], text[third : 2 * third], text[2 * third :]) if p]


# --- OpenAI Chat Completions ----------------------------------------------------------


def chat_json(reply: Reply, n: int) -> dict[str, Any]:
    inp, out = _usage(n)
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": name, "arguments": args}}
            for i, name, args in reply.calls
        ]
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1700000000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
    }


def chat_sse(reply: Reply, n: int) -> Iterator[tuple[str, str]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[str, str]:
        body = {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return "", json.dumps(body)

    yield chunk({"role": "assistant", "content": ""})
    for piece in _split(reply.text) if reply.text else ():
        yield chunk({"content": piece})
    pieces = [_split(args) for _, _, args in reply.calls]
    for index, (call_id, name, _) in enumerate(reply.calls):
        function = {"name": name, "arguments": ""}
        yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                     "function": function}]})  # fmt: skip
    for step in range(3):  # fragments of all calls interleave
        for index, parts in enumerate(pieces):
            if step < len(parts):
                fragment = {"index": index, "function": {"arguments": parts[step]}}
                yield chunk({"tool_calls": [fragment]})
    yield chunk({}, "tool_calls" if reply.calls else "stop")
    inp, out = _usage(n)
    usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out}
    final = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1700000000,
             "model": MODEL, "choices": [], "usage": usage}  # fmt: skip
    yield "", json.dumps(final)
    yield "", "[DONE]"


# --- OpenAI Responses -----------------------------------------------------------------


def _responses_items(reply: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reply.reasoning:
        items.append(
            {"type": "reasoning", "id": "rs_" + reply.reasoning.split()[0],
             "summary": [{"type": "summary_text", "text": reply.reasoning}],
             "encrypted_content": "enc:" + reply.reasoning}
        )  # fmt: skip
    if reply.text:
        items.append(
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}
        )  # fmt: skip
    for call_id, name, args in reply.calls:
        items.append(
            {"type": "function_call", "id": "fc_" + call_id, "call_id": call_id, "name": name,
             "arguments": args, "status": "completed"}
        )  # fmt: skip
    return items


def responses_json(reply: Reply, n: int) -> dict[str, Any]:
    inp, out = _usage(n)
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": 1700000000,
        "status": "completed",
        "model": MODEL,
        "output": _responses_items(reply),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out},
    }


def responses_sse(reply: Reply, n: int) -> Iterator[tuple[str, str]]:
    seq = iter(range(10_000))

    def event(kind: str, **data: Any) -> tuple[str, str]:
        return kind, json.dumps({"type": kind, "sequence_number": next(seq), **data})

    shell = {**responses_json(reply, n), "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=shell)
    items = _responses_items(reply)
    for index, item in enumerate(items):
        if item["type"] == "message":
            empty = {**item, "content": [], "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=empty)
            yield event("response.output_text.delta", output_index=index, item_id=item["id"],
                        content_index=0, delta=reply.text)  # fmt: skip
        elif item["type"] == "reasoning":
            added = {"type": "reasoning", "id": item["id"], "summary": []}
            yield event("response.output_item.added", output_index=index, item=added)
        else:
            added = {**item, "arguments": "", "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=added)
    for step in range(3):
        for index, item in enumerate(items):
            parts = _split(item["arguments"]) if item["type"] == "function_call" else []
            if step < len(parts):
                yield event("response.function_call_arguments.delta", output_index=index,
                            item_id=item["id"], delta=parts[step])  # fmt: skip
    for index, item in enumerate(items):
        if item["type"] == "function_call":
            yield event("response.function_call_arguments.done", output_index=index,
                        item_id=item["id"], arguments=item["arguments"])  # fmt: skip
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=responses_json(reply, n))


# --- Anthropic Messages ---------------------------------------------------------------


def anthropic_json(reply: Reply, n: int) -> dict[str, Any]:
    inp, out = _usage(n)
    content: list[dict[str, Any]] = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for call_id, name, args in reply.calls:
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": json.loads(args)})
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": "tool_use" if reply.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }


def anthropic_sse(reply: Reply, n: int) -> Iterator[tuple[str, str]]:
    def event(kind: str, **data: Any) -> tuple[str, str]:
        return kind, json.dumps({"type": kind, **data})

    inp, out = _usage(n)
    start = {**anthropic_json(Reply(), n), "content": [], "stop_reason": None,
             "usage": {"input_tokens": inp, "output_tokens": 1}}  # fmt: skip
    yield event("message_start", message=start)
    index = 0
    if reply.text:
        yield event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        yield event("ping")
        delta = {"type": "text_delta", "text": reply.text}
        yield event("content_block_delta", index=0, delta=delta)
        yield event("content_block_stop", index=0)
        index = 1
    for call_id, name, args in reply.calls:  # blocks are sequential in this API
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        yield event("content_block_start", index=index, content_block=block)
        for part in _split(args):
            delta = {"type": "input_json_delta", "partial_json": part}
            yield event("content_block_delta", index=index, delta=delta)
        yield event("content_block_stop", index=index)
        index += 1
    stop = {"stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None}
    yield event("message_delta", delta=stop, usage={"output_tokens": out})
    yield event("message_stop")


# --- Gemini ---------------------------------------------------------------------------


def _gemini_chunk(parts: list[dict[str, Any]], n: int, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if last:
        inp, out = _usage(n)
        candidate["finishReason"] = "STOP"
        body["usageMetadata"] = {"promptTokenCount": inp, "candidatesTokenCount": out,
                                 "totalTokenCount": inp + out}  # fmt: skip
    return body


def _gemini_parts(reply: Reply) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
    for _, name, args in reply.calls:  # Gemini sends no call ids
        parts.append({"functionCall": {"name": name, "args": json.loads(args)}})
    return parts


def gemini_json(reply: Reply, n: int) -> dict[str, Any]:
    return _gemini_chunk(_gemini_parts(reply), n, last=True)


def gemini_sse(reply: Reply, n: int) -> Iterator[tuple[str, str]]:
    parts = _gemini_parts(reply)
    for i, part in enumerate(parts):
        yield "", json.dumps(_gemini_chunk([part], n, last=i == len(parts) - 1))
    if not parts:
        yield "", json.dumps(_gemini_chunk([], n, last=True))


RENDER = {
    "openai_chat": (chat_json, chat_sse),
    "openai_responses": (responses_json, responses_sse),
    "anthropic": (anthropic_json, anthropic_sse),
    "gemini": (gemini_json, gemini_sse),
}


def error_body(provider: str, status: int) -> dict[str, Any]:
    """The error document each provider sends with an error status."""
    message = "Rate limit reached" if status == 429 else "The server is overloaded"
    if provider == "anthropic":
        kind = "rate_limit_error" if status == 429 else "overloaded_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if provider == "gemini":
        state = "RESOURCE_EXHAUSTED" if status == 429 else "UNAVAILABLE"
        return {"error": {"code": status, "message": message, "status": state}}
    kind = "rate_limit_exceeded" if status == 429 else "server_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


PATHS = {
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": f"/v1beta/models/{MODEL}:generateContent",
}


def _authorised(provider: str, headers: dict[str, str]) -> bool:
    if provider == "anthropic":
        return headers.get("x-api-key") == API_KEY and "anthropic-version" in headers
    if provider == "gemini":
        return headers.get("x-goog-api-key") == API_KEY
    return headers.get("authorization") == f"Bearer {API_KEY}"


def _expected_path(model: FakeModel) -> str:
    path = PATHS[model.provider]
    if model.provider == "gemini" and model.stream:
        return path.replace(":generateContent", ":streamGenerateContent") + "?alt=sse"
    return path


class _Handler(http.server.BaseHTTPRequestHandler):
    model: FakeModel

    def do_POST(self) -> None:
        model = self.server.model  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path != _expected_path(model) or not _authorised(model.provider, headers):
            self._send(404 if self.path != _expected_path(model) else 401, {"error": "no"})
            return
        model.requests.append(Recorded(self.path, headers, body, time.monotonic()))
        model.requested.set()
        reply, n = model.next_reply(), len(model.requests)
        if reply.status != 200:
            extra = {"Retry-After": reply.retry_after} if reply.retry_after is not None else {}
            self._send(reply.status, error_body(model.provider, reply.status), extra)
            return
        to_json, to_sse = RENDER[model.provider]
        wants_stream = bool(body.get("stream")) or self.path.endswith("alt=sse")
        if not wants_stream:
            time.sleep(reply.stall)
            self._send(200, to_json(reply, n))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for number, (name, data) in enumerate(to_sse(reply, n)):
            event = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
            try:
                self.wfile.write(event.encode())
                self.wfile.flush()
            except OSError:  # the client went away (an aborted turn)
                return
            if number == 0:
                time.sleep(reply.stall)

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


class FakeModelServer:
    """``with FakeModelServer(model) as base_url:`` -- serves until the block ends."""

    def __init__(self, model: FakeModel) -> None:
        self.model = model
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.model = model  # type: ignore[attr-defined]
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> str:
        self.thread.start()
        host, port = self.httpd.server_address[:2]
        prefix = "" if self.model.provider == "gemini" else "/v1"
        base = f"http://{host!s}:{port}"
        self.model.base_url = base + prefix if self.model.provider != "anthropic" else base
        return self.model.base_url

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


# --- What the loop sent back, per provider ---------------------------------------------


def tool_results(provider: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results of a request's last results message: ``{"id", "text", "error"}``."""
    if provider == "openai_chat":
        tail = []
        for message in reversed(body["messages"]):
            if message["role"] == "tool":
                tail.append(message)
            elif tail:
                break
        return [
            {
                "id": m["tool_call_id"],
                "text": m["content"],
                "error": '"status": "error"' in m["content"],
            }
            for m in reversed(tail)
        ]
    if provider == "openai_responses":
        tail = []
        for item in reversed(body["input"]):
            if item.get("type") == "function_call_output":
                tail.append(item)
            elif tail:
                break
        return [
            {"id": i["call_id"], "text": i["output"], "error": '"status": "error"' in i["output"]}
            for i in reversed(tail)
        ]
    if provider == "anthropic":
        blocks = body["messages"][-1]["content"]
        return [
            {"id": b["tool_use_id"], "text": "".join(c.get("text", "") for c in b["content"]),
             "error": b.get("is_error", False)}
            for b in blocks
        ]  # fmt: skip
    parts = body["contents"][-1]["parts"]
    out = []
    for part in parts:
        response = part["functionResponse"]
        error = response["response"].get("error")
        text = error["message"] if error else response["response"]["output"]
        out.append({"id": response.get("id", response["name"]), "text": text, "error": bool(error)})
    return out
