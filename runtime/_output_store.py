"""Truncation of large outputs, and the bounded store that keeps them readable.

A model's context is small, so the pipeline cuts text output at a byte limit (16 KB by
default, never inside a UTF-8 character; details, display and error messages are bounded
the same way, see :mod:`._bounds`) and appends
:func:`~toolcage.policies.truncation_marker`::

    [output truncated — original size: 142,857 bytes]
    [full output: call tool_output_read with handle "out_5f1c9a2e4b7d" to read more]

The full text is not lost: it stays in an :class:`OutputStore`, bounded in entries, bytes
and age, readable only from the session that produced it, through the read-only
``tool_output_read`` tool, which pages through it by byte offset.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolcage.policies import OutputStoreConfig

from ._errors import ToolNotFoundError, ToolValidationError
from ._result import ToolResult
from ._tool import FunctionDecl, SafetyTier, ToolExecutionContext


def cut_utf8(data: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes of ``data``, ending on a character boundary."""
    if len(data) <= limit:
        return data
    end = limit
    # Back off over continuation bytes (10xxxxxx) to the start of the cut character.
    while end > 0 and (data[end] & 0xC0) == 0x80:
        end -= 1
    return data[:end]


@dataclass(slots=True)
class _Entry:
    data: bytes
    owner: tuple[str, str, str]
    created: float


class OutputStore:
    """Full texts of truncated outputs, bounded by count, total bytes and age."""

    def __init__(self, max_entries: int, max_total_bytes: int, max_age_seconds: float) -> None:
        self.max_entries = max_entries
        self.max_total_bytes = max_total_bytes
        self.max_age_seconds = max_age_seconds
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._total = 0

    @classmethod
    def from_config(cls, config: OutputStoreConfig) -> OutputStore:
        return cls(config.max_entries, config.max_total_bytes, config.max_age_seconds)

    def put(self, data: bytes, ctx: ToolExecutionContext) -> str:
        """Keep ``data`` (at most ``max_total_bytes`` of it); return its handle."""
        data = cut_utf8(data, self.max_total_bytes)
        handle = "out_" + secrets.token_hex(6)
        self._entries[handle] = _Entry(data, _owner(ctx), time.monotonic())
        self._total += len(data)
        self._evict()
        return handle

    def get(self, handle: str, ctx: ToolExecutionContext) -> bytes:
        self._evict()
        entry = self._entries.get(handle)
        if entry is None or entry.owner != _owner(ctx):
            raise ToolNotFoundError(
                f"no stored output with handle {handle!r} (outputs expire after "
                f"{self.max_age_seconds:.0f} s and are readable only in their own session)"
            )
        return entry.data

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def total_bytes(self) -> int:
        return self._total

    def _evict(self) -> None:
        oldest_allowed = time.monotonic() - self.max_age_seconds
        while self._entries:
            handle, entry = next(iter(self._entries.items()))
            too_many = len(self._entries) > self.max_entries or self._total > self.max_total_bytes
            if not too_many and entry.created >= oldest_allowed:
                break
            del self._entries[handle]
            self._total -= len(entry.data)


class ToolOutputRead:
    """The ``tool_output_read`` tool: page through an output that was truncated."""

    timeout = 5.0
    safety_tier = SafetyTier.READ_ONLY
    needs = ("output store",)

    def __init__(self, store: OutputStore, page_limit: int = 16 * 1024) -> None:
        self._store = store
        self._page_limit = page_limit
        self._decl = FunctionDecl(
            name="tool_output_read",
            description="Read more of a tool output that was truncated, by its handle.",
            parameters={
                "type": "object",
                "properties": {
                    "handle": {
                        "type": "string",
                        "description": "The handle named in the truncation marker.",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 0,
                        "default": 0,
                        "description": "Byte offset to start reading at.",
                    },
                    "max_bytes": {
                        "type": "integer",
                        "minimum": 1,
                        "default": 8192,
                        "description": f"How many bytes to return (at most {page_limit}).",
                    },
                },
                "required": ["handle"],
                "additionalProperties": False,
            },
        )

    def schema(self) -> FunctionDecl:
        return self._decl

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        data = self._store.get(args["handle"], ctx)
        offset = int(args.get("offset", 0))
        if offset > len(data):
            raise ToolValidationError(
                f"offset {offset:,} is past the end of the output ({len(data):,} bytes)",
                field="offset",
            )
        while offset < len(data) and (data[offset] & 0xC0) == 0x80:
            offset += 1  # start on a character boundary
        size = min(int(args.get("max_bytes", 8192)), self._page_limit)
        page = cut_utf8(data[offset:], size)
        end = offset + len(page)
        return ToolResult.text(
            page.decode("utf-8"),
            details={
                "handle": args["handle"],
                "offset": offset,
                "next_offset": end,
                "total_bytes": len(data),
                "eof": end >= len(data),
            },
            display=f"bytes {offset:,}–{end:,} of {len(data):,}",
        )


def _owner(ctx: ToolExecutionContext) -> tuple[str, str, str]:
    """Whose an output is: its principal's user, agent and session."""
    principal = ctx.principal
    return (principal.user_id, principal.agent_id, principal.session_id)
