"""What a tool call returns."""

from __future__ import annotations

import base64
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


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The one result every tool call yields, success or failure."""

    content: tuple[ContentBlock, ...] = ()
    """What the model sees."""
    details: Any = None
    """Structured, JSON-serialisable data for the host (not necessarily shown to the model).
    The pipeline bounds it like text: details too large as JSON become a small object naming
    the handle of the full JSON (see :mod:`._bounds`)."""
    display: str | None = None
    """A short human-readable summary for UIs."""
    is_error: bool = False
    """Whether the call failed; then ``error`` says how."""
    duration: float = 0.0
    """Wall-clock seconds the call took, end to end (set by the pipeline)."""
    error: ToolError | None = None
    """The failure, when ``is_error``."""
    tool: str = ""
    """Name of the tool that produced this result (set by the pipeline)."""

    @classmethod
    def text(cls, text: str, *, details: Any = None, display: str | None = None) -> ToolResult:
        """A successful result of one text block."""
        return cls(content=(TextContent(text),), details=details, display=display)

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

    def finished(self, tool: str, duration: float) -> ToolResult:
        """This result, stamped with the tool that produced it and the call's duration."""
        return ToolResult(
            self.content, self.details, self.display, self.is_error, duration, self.error, tool
        )

    @property
    def output_text(self) -> str:
        """All text blocks, joined by newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def envelope(self) -> dict[str, Any]:
        """The JSON envelope: ``{"status": "success", "result": ...}`` or the error form.

        ``result`` is the text output; ``details`` and ``images`` are added when present.
        """
        if self.error is not None:
            body = self.error.envelope(self.tool)
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
        body["duration_ms"] = round(self.duration * 1000, 3)
        return body
