"""The ``channel`` binding: files and texts a guest hands over to be sent to the call's
channel.

Two imports; a file goes binary rather than as JSON so it is never base64-encoded::

    toolcage_channel_v1.send(meta_ptr, meta_len, data_ptr, data_len) -> i32  result length
    toolcage_channel_v1.message(req_ptr, req_len)                   -> i32  result length
    toolcage_channel_v1.result(buf_ptr, buf_len)                     -> i32  bytes copied

``meta`` is ``{"name": "chart.png", "mime_type": "image/png"}`` (the guest sniffed the
type from the bytes); ``data`` is the file. What one call hands over is bounded: past
``[channel] max_media_bytes`` in all, a file is refused (``validation_error``) without being
read. ``message`` takes ``{"text": "..."}``: a text that is blank or longer than ``[channel]
max_message_chars`` is refused (``validation_error``).

The host function runs in the guest's worker thread, while a
:class:`~._channel.Channel` is async and belongs to the event loop, so the binding sends
nothing itself: it puts the attachment or text in the call's *outbox*, and the tool, back on
the event loop once its guest has succeeded, takes the outbox (:meth:`MediaBinding.take`)
and sends it (:func:`text_messages`, :func:`media_message`). A guest that fails sends
nothing; the tool's result is the guest's ("what was sent") only once sending succeeded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import wasmtime

from ._abi import (
    I32,
    AbiError,
    GuestError,
    PendingResults,
    call_state,
    failed,
    guarded,
    module_name,
    ok,
    parse_request,
)
from ._base import CallState
from ._channel import Attachment, ChannelMessage, MessageKind
from ._memory import read_bytes
from ._results import JsonHandler, define_json_calls

MAX_NAME_CHARS = 255


Outgoing = Attachment | str
"""What a guest handed over: a file, or a text message."""


class MediaBinding:
    """Capability ``channel``: ``toolcage_channel_v1.send`` and ``.message``, into the call's
    outbox."""

    name = "channel"

    def __init__(self, max_bytes: int, max_message_chars: int = 4000) -> None:
        self.max_bytes = max_bytes
        self.max_message_chars = max_message_chars
        self._lock = threading.Lock()
        self._outbox: dict[int, tuple[CallState, list[Outgoing]]] = {}

    def define(self, linker: wasmtime.Linker) -> None:
        module = module_name(self.name)
        pending = PendingResults()

        def send(caller: wasmtime.Caller, meta_ptr: int, meta_len: int, ptr: int, n: int) -> int:
            state = call_state()
            meta = parse_request(read_bytes(caller, meta_ptr, meta_len))
            name, media_type = meta.get("name"), meta.get("mime_type")
            if not isinstance(name, str) or not isinstance(media_type, str) or n < 0:
                raise GuestError(AbiError.INVALID)
            if self._queued(state) + n > self.max_bytes:
                answer = failed(
                    "validation_error",
                    f"{name} is too large to send ({n:,} bytes; the limit is "
                    f"{self.max_bytes:,} bytes per call, [channel] max_media_bytes)",
                )
            else:
                item = Attachment(name[:MAX_NAME_CHARS], media_type, read_bytes(caller, ptr, n, n))
                self._put(state, item)
                answer = ok(text=json.dumps(described(item, state.principal.send_channel_id)))
            return pending.put(state, answer)

        linker.define_func(
            module, "send", wasmtime.FuncType([I32, I32, I32, I32], [I32]), guarded(send), True
        )
        define_json_calls(linker, module, self.calls(), pending)

    def calls(self) -> dict[str, JsonHandler]:
        """The JSON calls this binding answers (``send`` is binary, defined apart)."""
        return {"message": self.message}

    def message(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """Queue the text message ``{"text": ...}`` of the call."""
        text = request.get("text")
        if not isinstance(text, str):
            raise GuestError(AbiError.INVALID)
        if not text.strip():
            return failed("validation_error", "text is blank; write the message")
        if len(text) > self.max_message_chars:
            return failed(
                "validation_error",
                f"the message is too long ({len(text):,} characters; the limit is "
                f"{self.max_message_chars:,}, [channel] max_message_chars)",
            )
        self._put(state, text)
        sent = {
            "sent": "message",
            "chars": len(text),
            "channel_id": state.principal.send_channel_id,
        }
        return ok(text=json.dumps(sent))

    def take(self, state: CallState) -> list[Outgoing]:
        """What the call's guest handed over, in order, removed from the outbox."""
        with self._lock:
            entry = self._outbox.pop(id(state), None)
        return [] if entry is None else entry[1]

    def _queued(self, state: CallState) -> int:
        """Bytes the call's guest handed over so far: a call sends ``max_bytes`` in all."""
        with self._lock:
            entry = self._outbox.get(id(state))
        if entry is None:
            return 0
        return sum(len(item.data) for item in entry[1] if isinstance(item, Attachment))

    def _put(self, state: CallState, item: Outgoing) -> None:
        with self._lock:
            # The state is kept beside its id, so the id cannot be reused while queued.
            entry = self._outbox.setdefault(id(state), (state, []))
            entry[1].append(item)


def described(item: Attachment, channel_id: str | None) -> dict[str, object]:
    """What a tool's result says was sent."""
    return {
        "sent": item.name,
        "mime_type": item.media_type,
        "bytes": len(item.data),
        "channel_id": channel_id,
    }


def media_message(
    user_id: str, channel_id: str | None, items: Sequence[Outgoing]
) -> ChannelMessage | None:
    """The channel message carrying the files among ``items`` to ``user_id`` (``None``:
    there are none)."""
    files = [item for item in items if isinstance(item, Attachment)]
    if not files:
        return None
    names = ", ".join(item.name for item in files)
    return ChannelMessage(
        kind=MessageKind.MEDIA,
        user_id=user_id,
        channel_id=channel_id,
        text=f"sent {names}",
        data={"sent": [described(item, channel_id) for item in files]},
        attachments=tuple(files),
    )


def text_messages(
    user_id: str, channel_id: str | None, items: Sequence[Outgoing]
) -> list[ChannelMessage]:
    """The channel messages carrying the texts among ``items`` to ``user_id``."""
    return [
        ChannelMessage(
            kind=MessageKind.MESSAGE,
            user_id=user_id,
            channel_id=channel_id,
            text=item,
            data={"sent": "message", "chars": len(item)},
        )
        for item in items
        if isinstance(item, str)
    ]
