"""The ``Channel`` seam: where messages to the user go outside a tool result.

The embedder implements :class:`Channel` (a chat connector, a queue, a web socket); the
scheduler sends each notified run through it, ``send_media`` each attachment and
``send_message`` each text. A
message names the ``channel_id`` it is addressed to (for a schedule: the channel of the
call that created it) and the user it is for. ``toolcage.runtime.JsonLinesChannel`` is
the built-in one the CLI uses.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class MessageKind(enum.StrEnum):
    """What a channel message carries."""

    SCHEDULE_RUN = "schedule_run"
    """A scheduled run ended; ``data`` is its run record, ``text`` its summary."""
    MEDIA = "media"
    """A file sent by a tool; ``attachments`` holds it."""
    MESSAGE = "message"
    """A text sent by a tool (``send_message``); ``text`` holds it."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file sent through a channel."""

    name: str
    """The file's name (its last path component)."""
    media_type: str
    """Its type, sniffed from its content (``image/png``)."""
    data: bytes
    """Its bytes (within the configured size cap)."""


@dataclass(frozen=True, slots=True)
class ChannelMessage:
    """One message to a user's channel."""

    kind: MessageKind
    """What it carries."""
    user_id: str
    """The user it is for."""
    channel_id: str | None
    """The channel it is addressed to; ``None`` when the originating call named none."""
    text: str
    """A human-readable line (a run's summary, a caption)."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """Structured details, JSON-serialisable (a run record, what was sent)."""
    attachments: tuple[Attachment, ...] = ()
    """Files, for :attr:`MessageKind.MEDIA`."""


@runtime_checkable
class Channel(Protocol):
    """Delivers messages to users. ``send`` may be called from several tasks at once."""

    async def send(self, message: ChannelMessage) -> None:
        """Deliver ``message``; raising means it was not delivered (the caller logs it)."""
        ...
