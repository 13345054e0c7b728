"""What a tool call returns: content for the model, and what hosts and people read beside it.

A result speaks to two audiences. The model reads ``content`` and ``details`` (the provider
adapters and the MCP server send both); a person reads ``display``, one line for a UI or a
log, which no adapter sends to a model. ``artifacts`` name what the call created, changed or
sent (a file, a memory note, a schedule, a media message), for the host to track.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import ToolError


@dataclass(frozen=True, slots=True)
class TextContent:
    """A block of text for the model."""

    text: str
    type: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ImageContent:
    """An image for the model."""

    data: bytes = field(repr=False)
    """Raw image bytes."""
    mime_type: str = "image/png"
    type: Literal["image"] = "image"

    def base64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")


ContentBlock = TextContent | ImageContent


class ArtifactAction(enum.StrEnum):
    """What a call did to an artifact."""

    CREATED = "created"
    MODIFIED = "modified"
    DELETED = "deleted"
    SENT = "sent"
    """Delivered elsewhere (media sent to the user's channel)."""
    OMITTED = "omitted"
    """Only on the record that stands for artifacts cut by the output limit (see
    :data:`ARTIFACTS_TRUNCATED`)."""


ARTIFACTS_TRUNCATED = "truncated"
"""The ``kind`` of the last record of an artifact list cut at the output limit: its ``ref``
is the truncation marker, naming the handle under which the whole list is kept."""


@dataclass(frozen=True, slots=True)
class Artifact:
    """Something a call created, changed, deleted or sent.

    >>> Artifact("file", "/workspace/notes.txt", ArtifactAction.CREATED).to_json()
    {'kind': 'file', 'ref': '/workspace/notes.txt', 'action': 'created'}
    """

    kind: str
    """What it is: ``file`` (a path in the file system: a file, directory or link),
    ``memory`` (a note), ``schedule``, ``media`` (a file sent to the channel), or a kind of
    the tool's own."""
    ref: str
    """Which one: a guest path (names shown escaped, as in the text), a note or schedule
    id, a file name."""
    action: ArtifactAction
    """What the call did to it."""

    def to_json(self) -> dict[str, str]:
        """The artifact as the envelope carries it."""
        return {"kind": self.kind, "ref": self.ref, "action": self.action.value}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The one result every tool call yields, success or failure."""

    content: tuple[ContentBlock, ...] = ()
    """What the model sees."""
    details: Any = None
    """Structured, JSON-serialisable facts a caller decides on (``{"path", "bytes",
    "lines"}`` of a read); the model gets them beside the text. The pipeline bounds them like
    text: details too large as JSON become a small object naming the handle of the full JSON
    (see :mod:`._bounds`)."""
    display: str | None = None
    """One line for a person ("Read README.md (42 lines)"), for UIs and logs; never sent to
    a model. The pipeline makes it one line of visible text (see :mod:`._display`)."""
    is_error: bool = False
    """Whether the call failed; then ``error`` says how."""
    duration: float = 0.0
    """Wall-clock seconds the call took, end to end (set by the pipeline)."""
    error: ToolError | None = None
    """The failure, when ``is_error``."""
    tool: str = ""
    """Name of the tool that produced this result (set by the pipeline)."""
    pending_call: str | None = None
    """Set on the result of a client-side tool: the id of the call whose result the host's
    own client provides later (see :meth:`pending`)."""
    artifacts: tuple[Artifact, ...] = ()
    """What the call created, changed, deleted or sent; bounded by the pipeline like
    ``details`` (see :mod:`._bounds`)."""

    @classmethod
    def text(
        cls,
        text: str,
        *,
        details: Any = None,
        display: str | None = None,
        artifacts: tuple[Artifact, ...] = (),
    ) -> ToolResult:
        """A successful result of one text block."""
        return cls(
            content=(TextContent(text),), details=details, display=display, artifacts=artifacts
        )

    @classmethod
    def failure(cls, tool: str, error: ToolError, duration: float = 0.0) -> ToolResult:
        """The result of a failed call."""
        return cls(
            content=(TextContent(error.message),),
            is_error=True,
            error=error,
            tool=tool,
            duration=duration,
        )

    @classmethod
    def pending(cls, call_id: str) -> ToolResult:
        """The result of a call handed to the host's client: its result comes later."""
        text = f"pending: call {call_id} runs on the host's client"
        return cls(content=(TextContent(text),), pending_call=call_id)

    def finished(self, tool: str, duration: float) -> ToolResult:
        """This result, stamped with the tool that produced it and the call's duration."""
        return ToolResult(  # positional: this runs once per call
            self.content,
            self.details,
            self.display,
            self.is_error,
            duration,
            self.error,
            tool,
            self.pending_call,
            self.artifacts,
        )

    @property
    def output_text(self) -> str:
        """All text blocks, joined by newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def envelope(self) -> dict[str, Any]:
        """The JSON envelope: ``{"status": "success", "result": ...}``, the error form, or
        ``{"status": "pending", "call_id": ...}`` for a call handed to the host's client.

        ``result`` is the text output; ``details``, ``images`` and ``artifacts`` are added
        when present. ``display`` is not part of it: the envelope is what a model may read.
        """
        if self.error is not None:
            body = self.error.envelope(self.tool)
        elif self.pending_call is not None:
            body = {"status": "pending", "tool": self.tool, "call_id": self.pending_call}
        else:
            body = {"status": "success", "result": self.output_text}
            if self.details is not None:
                body["details"] = self.details
            images = [
                {"mime_type": b.mime_type, "data": b.base64()}
                for b in self.content
                if isinstance(b, ImageContent)
            ]
            if images:
                body["images"] = images
            if self.artifacts:
                body["artifacts"] = [a.to_json() for a in self.artifacts]
        body["duration_ms"] = round(self.duration * 1000, 3)
        return body
