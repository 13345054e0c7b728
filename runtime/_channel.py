"""``JsonLinesChannel``: the built-in :class:`~toolcage.host_bindings.Channel`, one JSON
object per message on a text stream (the CLI's stdout)::

    {"kind": "schedule_run", "user_id": "ada", "channel_id": "chat-7", "text": "3 new mails",
     "data": {...}, "attachments": [{"name": "chart.png", "media_type": "image/png",
     "size": 5120, "sha256": "..."}]}

Attachments are listed by name, type, size and digest, not their bytes, so every line
stays bounded. Lines are written whole under a lock, so concurrent senders never
interleave.
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any, TextIO

import anyio
from toolcage.host_bindings import ChannelMessage


class JsonLinesChannel:
    """Writes each message as one JSON line to ``stream`` (default: stdout)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._lock = anyio.Lock()

    async def send(self, message: ChannelMessage) -> None:
        line = json.dumps(message_json(message), ensure_ascii=False, default=str)
        async with self._lock:
            stream = self._stream or sys.stdout
            stream.write(line + "\n")
            stream.flush()


def message_json(message: ChannelMessage) -> dict[str, Any]:
    """``message`` as the JSON object :class:`JsonLinesChannel` writes."""
    return {
        "kind": message.kind.value,
        "user_id": message.user_id,
        "channel_id": message.channel_id,
        "text": message.text,
        "data": dict(message.data),
        "attachments": [
            {
                "name": a.name,
                "media_type": a.media_type,
                "size": len(a.data),
                "sha256": hashlib.sha256(a.data).hexdigest(),
            }
            for a in message.attachments
        ],
    }
