"""Every part of a result under the output limit, and nothing in it that pins memory.

A model's context is small and a host keeps results (a conversation history does), so the
pipeline bounds each part of a result at the tool's byte limit (``truncate_bytes``):

- the text blocks, joined, cut at the limit (never inside a UTF-8 character) with the
  truncation marker naming the handle of the full text in the :class:`OutputStore`;
- ``details``, measured as JSON: over the limit (or :data:`DETAILS_FLOOR`, the larger; a
  tool's small structured answer, such as the paging data of ``tool_output_read``, survives
  even a tiny limit), it is replaced by a small object saying so (``truncated``,
  ``original_bytes``, ``handle``, ``note``), the full JSON kept in the store; details that
  are not JSON at all are replaced by a note saying why;
- ``display`` and an error's message, cut like text (the full text kept), an error's field
  name cut;
- images beyond :data:`IMAGE_BYTES` in total, replaced by a text note (an image cut in half
  is no image; the limit is the size providers accept).

A failure keeps its error, but not the traceback it was raised with: the frames of a failed
call (and whatever they reference -- a guest's store, the arguments) are not pinned by a
result that the host keeps.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from toolcage.policies import truncation_marker

from ._errors import ToolError
from ._output_store import OutputStore, cut_utf8
from ._result import ContentBlock, ImageContent, TextContent, ToolResult
from ._tool import ToolExecutionContext

IMAGE_BYTES = 20 << 20
"""Total image bytes one result may carry."""
DETAILS_FLOOR = 4096
"""Details of this many bytes are kept whatever the limit."""


def detach(error: ToolError) -> ToolError:
    """``error`` without the tracebacks of its chain (see the module docstring)."""
    link: BaseException | None = error
    for _ in range(64):  # a chain is short; this also ends a cyclic one
        if link is None:
            break
        link.__traceback__ = None
        link = link.__cause__ or link.__context__
    return error


def bound_result(
    result: ToolResult, limit: int, store: OutputStore, ctx: ToolExecutionContext
) -> ToolResult:
    """``result`` with every part under ``limit`` bytes (see the module docstring)."""
    quick = limit // 4  # a str of this many characters cannot exceed the limit
    text_chars = 0
    plain = True
    images = False
    for block in result.content:
        if isinstance(block, TextContent):
            text_chars += len(block.text)
            plain = plain and _encodes(block.text)
        else:
            images = True
    error = result.error
    display = result.display
    if (
        text_chars <= quick
        and plain
        and result.details is None
        and not images
        and (display is None or _fits(display, quick))
        and (error is None or _error_fits(error, quick))
    ):
        return result
    changes: dict[str, Any] = {}
    keep = _Keep(store, ctx)
    if text_chars > quick or not plain or images:
        content = _bound_content(result.content, limit, keep)
        if content is not None:
            changes["content"] = content
    if result.details is not None:
        details_limit = max(limit, DETAILS_FLOOR)
        details = _bound_details(result.details, details_limit // 4, details_limit, keep)
        if details is not result.details:
            changes["details"] = details
    if display is not None and not _fits(display, quick):
        changes["display"] = _bound_text(display, limit, keep)
    if error is not None and not _error_fits(error, quick):
        changes["error"] = _bound_error(error, limit, keep)
    return dataclasses.replace(result, **changes) if changes else result


def bound_error(
    error: ToolError, limit: int, store: OutputStore, ctx: ToolExecutionContext
) -> ToolError:
    """``error``, or a copy whose message and field fit ``limit`` bytes as UTF-8."""
    if _error_fits(error, limit // 4):
        return error
    return _bound_error(error, limit, _Keep(store, ctx))


def _bound_error(error: ToolError, limit: int, keep: _Keep) -> ToolError:
    quick = limit // 4
    bounded = copy.copy(error)
    bounded.message = _bound_text(error.message, limit, keep)
    bounded.args = (bounded.message,)
    if error.field is not None and not _fits(error.field, quick):
        field = _encodable(error.field).encode("utf-8")
        bounded.field = cut_utf8(field, limit).decode("utf-8")
    return bounded


def _encodes(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (it holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _encodable(text: str) -> str:
    """``text`` with any lone surrogate written as its escape (``\\udc80``)."""
    return text if _encodes(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def _fits(text: str, quick: int) -> bool:
    return len(text) <= quick and _encodes(text)


def _error_fits(error: ToolError, quick: int) -> bool:
    return _fits(error.message, quick) and (error.field is None or _fits(error.field, quick))


class _Keep:
    """The output store, for the parts of one result: a part equal to the one kept just
    before (the JSON text of a value and the value as details) shares its handle."""

    def __init__(self, store: OutputStore, ctx: ToolExecutionContext) -> None:
        self.store = store
        self.ctx = ctx
        self.last: tuple[bytes, str] | None = None

    def put(self, data: bytes) -> str:
        if self.last is not None and self.last[0] == data:
            return self.last[1]
        handle = self.store.put(data, self.ctx)
        self.last = (data, handle)
        return handle


def _bound_text(text: str, limit: int, keep: _Keep) -> str:
    text = _encodable(text)
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    handle = keep.put(data)
    cut = cut_utf8(data, limit).decode("utf-8")
    return f"{cut}\n{truncation_marker(len(data), handle=handle)}"


def _bound_content(
    content: tuple[ContentBlock, ...], limit: int, keep: _Keep
) -> tuple[ContentBlock, ...] | None:
    """The content with its text and images bounded; ``None`` when nothing changed."""
    texts = [b.text for b in content if isinstance(b, TextContent)]
    joined = "\n".join(texts)
    shown = _bound_text(joined, limit, keep)
    kept: list[ContentBlock] = []
    dropped: list[str] = []
    total = 0
    for block in content:
        if isinstance(block, ImageContent):
            total += len(block.data)
            if total <= IMAGE_BYTES:
                kept.append(block)
            else:
                dropped.append(
                    f"[image omitted: {len(block.data):,} bytes of {block.mime_type}, over the "
                    f"limit of {IMAGE_BYTES:,} image bytes per result]"
                )
    if shown is joined and not dropped:
        return None
    blocks: list[ContentBlock] = [TextContent(shown)] if texts or shown else []
    blocks += [TextContent(note) for note in dropped]
    return (*blocks, *kept)


def _bound_details(details: Any, quick: int, limit: int, keep: _Keep) -> Any:
    try:
        encoded = json.dumps(details, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        return {"omitted": True, "note": f"details are not JSON: {type(exc).__name__}: {exc}"[:200]}
    if len(encoded) <= quick:
        return details
    data = encoded.encode("utf-8", "replace")
    if len(data) <= limit:
        return details
    handle = keep.put(data)
    return {
        "truncated": True,
        "original_bytes": len(data),
        "handle": handle,
        "note": truncation_marker(len(data), handle=handle),
    }
