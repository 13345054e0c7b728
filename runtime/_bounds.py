"""Every part of a result under the output limit, and nothing in it that pins memory.

A model's context is small and a host keeps results (a conversation history does), so the
pipeline bounds each part of a result at the tool's byte limit (``truncate_bytes``):

- the text blocks, joined, cut at the limit (never inside a UTF-8 character) with the
  truncation marker naming the handle of the full text in the :class:`OutputStore`; when
  the text is cut, details that say whether the output was cut (``"truncated": false``,
  as ``file_read``'s do) say ``true``, so they agree with what the model received;
- ``details``, measured as JSON: over the limit (or :data:`DETAILS_FLOOR`, the larger; a
  tool's small structured answer, such as the paging data of ``tool_output_read``, survives
  even a tiny limit), it is replaced by a small object saying so (``truncated``,
  ``original_bytes``, ``handle``, ``note``), the full JSON kept in the store; details that
  are not JSON at all are replaced by a note saying why;
- ``artifacts``, measured as JSON against the same limit: over it, the first records that
  fit in half of it are kept, followed by one record of kind :data:`ARTIFACTS_TRUNCATED`
  whose ``ref`` is the truncation marker naming the handle of the whole list as JSON;
- ``display`` and an error's message, cut like text (the full text kept), an error's field
  name cut;
- images beyond :data:`IMAGE_BYTES` in total, replaced by a text note (an image cut in half
  is no image; the limit is the size providers accept).

Small details and artifacts -- what nearly every call returns -- are measured without
encoding them: an upper bound of their JSON size from their lengths is enough to pass them.

Before any of this, and so before the pipeline adds a note of its own, every line of the
tool's text blocks and error message that could pass for one of the pipeline's is escaped
(:mod:`._markers`), and the display line is made one line of visible text
(:mod:`._display`): the one place where this happens, for every tool.

A failure keeps its error, but not the traceback it was raised with: the frames of a failed
call (and whatever they reference -- a guest's store, the arguments) are not pinned by a
result that the host keeps.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from toolcage.policies import truncation_marker

from ._display import display_line
from ._errors import ToolError
from ._markers import neutralise
from ._output_store import OutputStore, cut_utf8
from ._result import (
    ARTIFACTS_TRUNCATED,
    Artifact,
    ArtifactAction,
    ContentBlock,
    ImageContent,
    TextContent,
    ToolResult,
)
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
    """``result`` with its tool text neutral and every part under ``limit`` bytes (see the
    module docstring)."""
    content = result.content
    if (  # the common result, one short ASCII text and nothing else, as it is
        len(content) == 1
        and type(content[0]) is TextContent
        and result.details is None
        and result.display is None
        and result.error is None
        and not result.artifacts
    ):
        text = content[0].text
        if len(text) <= limit // 4 and text.isascii() and "[" not in text:
            return result
    content = _neutral_content(content)
    error = result.error if result.error is None else _neutral_error(result.error)
    if content is not result.content or error is not result.error:
        result = dataclasses.replace(result, content=content, error=error)
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
    display = result.display
    shown = display if display is None else display_line(display)
    details_limit = max(limit, DETAILS_FLOOR)
    details_fit = result.details is None or _json_bound(result.details, details_limit) >= 0
    artifacts_fit = _artifacts_fit(result.artifacts, details_limit)
    if (
        text_chars <= quick
        and plain
        and details_fit
        and artifacts_fit
        and not images
        and (shown is None or (shown is display and _fits(shown, quick)))
        and (error is None or _error_fits(error, quick))
    ):
        return result
    changes: dict[str, Any] = {}
    keep = _Keep(store, ctx)
    details = result.details
    if text_chars > quick or not plain or images:
        bounded = _bound_content(result.content, limit, keep)
        if bounded is not None:
            changes["content"] = bounded
            cut = keep.last is not None  # the full text went to the store
            if cut and type(details) is dict and details.get("truncated") is False:
                details = changes["details"] = {**details, "truncated": True}
    if not details_fit:
        bounded_details = _bound_details(details, details_limit // 4, details_limit, keep)
        if bounded_details is not details:
            changes["details"] = bounded_details
    if not artifacts_fit:
        artifacts = _bound_artifacts(result.artifacts, details_limit, keep)
        if artifacts is not result.artifacts:
            changes["artifacts"] = artifacts
    if shown is not None and (shown is not display or not _fits(shown, quick)):
        changes["display"] = _bound_text(shown, limit, keep)
    if error is not None and not _error_fits(error, quick):
        changes["error"] = _bound_error(error, limit, keep)
    return dataclasses.replace(result, **changes) if changes else result


def bound_error(
    error: ToolError, limit: int, store: OutputStore, ctx: ToolExecutionContext
) -> ToolError:
    """``error``, or a copy whose message is neutral and, with its field, fits ``limit``
    bytes as UTF-8."""
    error = _neutral_error(error)
    if _error_fits(error, limit // 4):
        return error
    return _bound_error(error, limit, _Keep(store, ctx))


def _bound_error(error: ToolError, limit: int, keep: _Keep) -> ToolError:
    quick = limit // 4
    message = _bound_text(error.message, limit, keep)
    if error.field is not None and not _fits(error.field, quick):
        field = _encodable(error.field).encode("utf-8")
        return error.rewritten(message, field=cut_utf8(field, limit).decode("utf-8"))
    return error.rewritten(message)


def _neutral_content(content: tuple[ContentBlock, ...]) -> tuple[ContentBlock, ...]:
    """``content`` with the text of each block neutral (:func:`~._markers.neutralise`)."""
    changed: list[ContentBlock] | None = None
    for index, block in enumerate(content):
        if isinstance(block, TextContent):
            text = neutralise(block.text)
            if text is not block.text:
                changed = changed or list(content)
                changed[index] = TextContent(text)
    return content if changed is None else tuple(changed)


def _neutral_error(error: ToolError) -> ToolError:
    """``error``, or a copy whose message is neutral (:func:`~._markers.neutralise`)."""
    message = neutralise(error.message)
    return error if message is error.message else error.rewritten(message)


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


def _json_bound(value: Any, budget: int, depth: int = 0) -> int:
    """An upper bound of the bytes of ``value`` as JSON (UTF-8), or -1 when it may exceed
    ``budget`` or is not plainly JSON (other types, a float that is not finite, deep
    nesting): then it is encoded to know. The members of a container are measured in line,
    the way nearly every tool's details are flat."""
    kind = type(value)
    if kind is dict:
        items: Any = value.items()
    elif kind is list:
        items = enumerate(value)
    else:
        return _scalar_bound(value)
    if depth > 16:
        return -1
    total = 2
    for key, item in items:
        if kind is dict:
            if type(key) is not str:
                return -1
            total += 6 * len(key) + 4
        member = type(item)
        if member is str:
            total += 6 * len(item) + 4  # a control character is written as 6 bytes, \u00XX
        elif member is bool or item is None or (member is int and -(1 << 63) <= item < 1 << 63):
            total += 24
        else:
            size = _json_bound(item, budget - total, depth + 1)
            if size < 0:
                return -1
            total += size + 2
        if total > budget:
            return -1
    return total


def _scalar_bound(value: Any) -> int:
    """:func:`_json_bound` of a value that is not a container."""
    kind = type(value)
    if kind is str:
        return 6 * len(value) + 2
    if kind is int:
        bits: int = value.bit_length()
        return bits // 3 + 3
    if kind is bool or value is None:
        return 5
    if kind is float:
        return 24 if math.isfinite(value) else -1
    return -1


def _artifacts_fit(artifacts: tuple[Artifact, ...], limit: int) -> bool:
    """Whether ``artifacts`` surely fit ``limit`` bytes as JSON (from their lengths)."""
    total = 2
    for artifact in artifacts:
        total += 6 * (len(artifact.kind) + len(artifact.ref)) + 48
        if total > limit:
            return False
    return True


def _bound_artifacts(
    artifacts: tuple[Artifact, ...], limit: int, keep: _Keep
) -> tuple[Artifact, ...]:
    """``artifacts``, or the first of them that fit half of ``limit`` bytes and a record
    of kind :data:`ARTIFACTS_TRUNCATED` naming the handle of them all."""
    encoded = [json.dumps(a.to_json(), ensure_ascii=False) for a in artifacts]
    data = f"[{', '.join(encoded)}]".encode("utf-8", "replace")
    if len(data) <= limit:
        return artifacts
    handle = keep.put(data)
    kept, used = 0, 2
    for text in encoded:
        used += len(text.encode("utf-8", "replace")) + 2
        if used > limit // 2:
            break
        kept += 1
    marker = truncation_marker(len(data), handle=handle)
    return (*artifacts[:kept], Artifact(ARTIFACTS_TRUNCATED, marker, ArtifactAction.OMITTED))


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
