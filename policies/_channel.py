"""The ``[channel]`` section: what tools may send back to the user's channel.

::

    [channel]
    max_media_bytes = 10485760     # send_media refuses larger files
    max_message_chars = 4000       # send_message refuses longer texts
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_MEDIA_BYTES = 16 << 20
"""The most ``max_media_bytes`` may allow: what the ``send_media`` guest reads into its
memory at most."""

MAX_MESSAGE_CHARS = 20000
"""The most ``max_message_chars`` may allow: the longest text ``send_message`` declares."""


class ChannelConfig(BaseModel):
    """The ``[channel]`` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_media_bytes: int = Field(10 << 20, gt=0, le=MAX_MEDIA_BYTES)
    """Largest file ``send_media`` sends."""
    max_message_chars: int = Field(4000, gt=0, le=MAX_MESSAGE_CHARS)
    """Longest text ``send_message`` sends, in characters."""
