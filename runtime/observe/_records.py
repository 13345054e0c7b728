"""The audit records: one JSON object per call, per approval decision, per loss.

Every record has ``type`` and ``time`` (UTC, ISO 8601 with microseconds)::

    {"type": "call", "time": "...", "call_id": "call_1f..", "user_id": "local",
     "session_id": "default", "agent_id": "default", "channel_id": null,
     "session_kind": "main", "chain": ["default"], "tool": "http_request", "tier": "side_effecting",
     "arguments": {"url": "...", "headers": {"Authorization": "[REDACTED]"}},
     "arguments_sha256": "9f..", "decisions": [{"policy": "egress", "allowed": true,
     "reason": "https://example.com:443"}], "status": "success", "error_type": null,
     "result_bytes": 1234, "duration_ms": 12.5}

    {"type": "approval", ..., "tool": "shell_exec", "allowed": false,
     "reason": "The user did not approve this call of shell_exec", "arguments_sha256": "..."}

    {"type": "dropped", "time": "...", "count": 17}

``arguments_sha256`` is the SHA-256 of the full arguments in canonical JSON (sorted keys,
no spaces; of the text itself when they were not a JSON object), so a record can be
matched with the arguments of a call without showing them. The arguments and every
reason pass through the runtime's :class:`~toolcage.policies.Redactor` (strings longer than
``[audit] max_value_chars`` cut after it). Records are built on the writer's thread, never
in the call.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Mapping
from typing import Any

from toolcage.policies import Redactor

from .._approval import canonical_hash
from .._observe import CallTrace, PolicyDecision
from .._result import ImageContent, TextContent, ToolResult


def iso_time(seconds: float) -> str:
    """``seconds`` since the epoch as UTC ISO 8601 with microseconds and a ``Z``."""
    micros = int(seconds * 1_000_000)
    whole, fraction = divmod(micros, 1_000_000)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(whole))}.{fraction:06d}Z"


def arguments_hash(arguments: Mapping[str, Any] | str | object) -> str:
    """SHA-256 of the canonical arguments (of their text when they are not an object)."""
    if isinstance(arguments, Mapping):
        try:
            return canonical_hash(arguments)
        except (TypeError, ValueError):  # not plain JSON: the pipeline refused it
            pass
    text = arguments if isinstance(arguments, str) else repr(arguments)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _who(trace: CallTrace) -> dict[str, Any]:
    principal = trace.context.principal
    return {
        "call_id": trace.call.id,
        "user_id": principal.user_id,
        "session_id": principal.session_id,
        "agent_id": principal.agent_id,
        "channel_id": principal.channel_id,
        "session_kind": principal.session_kind.value,
        "chain": list(principal.chain),
        "tool": trace.call.name,
        "tier": None if trace.tier is None else trace.tier.value,
    }


def call_record(trace: CallTrace, redactor: Redactor, max_chars: int) -> dict[str, Any]:
    """The record of a finished call (strings cut at ``max_chars``)."""
    result = trace.result
    arguments = trace.arguments
    error = None if result is None else result.error
    return {
        "type": "call",
        "time": iso_time(trace.started_at),
        **_who(trace),
        "arguments": redactor.value(
            arguments if isinstance(arguments, str) else dict(arguments), max_chars
        ),
        "arguments_sha256": arguments_hash(arguments),
        "decisions": [
            _decision(decision, redactor, max_chars) for decision in list(trace.decisions)
        ],
        "status": "error" if result is None or result.is_error else "success",
        "error_type": None if error is None else error.kind.value,
        "result_bytes": 0 if result is None else result_size(result),
        "duration_ms": round((0.0 if result is None else result.duration) * 1000, 3),
    }


def approval_record(
    trace: CallTrace,
    decision: PolicyDecision,
    decided_at: float,
    redactor: Redactor,
    max_chars: int,
) -> dict[str, Any]:
    """The record of one approval decision."""
    return {
        "type": "approval",
        "time": iso_time(decided_at),
        **_who(trace),
        "allowed": decision.allowed,
        "reason": redactor.text(decision.reason, max_chars),
        "arguments_sha256": arguments_hash(trace.arguments),
    }


def _decision(decision: PolicyDecision, redactor: Redactor, max_chars: int) -> dict[str, Any]:
    """A decision as recorded; its reason may quote the arguments, so it is redacted too."""
    return {
        "policy": decision.policy,
        "allowed": decision.allowed,
        "reason": redactor.text(decision.reason, max_chars),
    }


def dropped_record(count: int, at: float) -> dict[str, Any]:
    """The record of records that could not be kept while the sink failed."""
    return {"type": "dropped", "time": iso_time(at), "count": count}


def result_size(result: ToolResult) -> int:
    """Bytes of what the caller got: its text, images and details as JSON."""
    size = 0
    for block in result.content:
        if isinstance(block, TextContent):
            size += len(block.text.encode("utf-8", "surrogatepass"))
        elif isinstance(block, ImageContent):
            size += len(block.data)
    if result.details is not None:
        with contextlib.suppress(TypeError, ValueError):  # details that are not JSON: no size
            size += len(json.dumps(result.details, ensure_ascii=False).encode("utf-8", "replace"))
    return size


def encode(record: Mapping[str, Any]) -> bytes:
    """One line of the log (UTF-8 JSON and a newline; anything not JSON becomes its repr)."""
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=repr)
    return text.encode("utf-8", "backslashreplace") + b"\n"
