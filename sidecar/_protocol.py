"""The sidecar's wire protocol, version 1: length-prefixed JSON frames over a Unix socket.

Framing
    Every message is one frame: a 4-byte unsigned big-endian length ``N``, then ``N`` bytes
    of UTF-8 JSON holding one object. ``1 <= N <= MAX_FRAME_BYTES`` (16 MiB).

Handshake
    The client's first frame is ``{"type": "hello", "protocol": "toolcage-shell",
    "version": 1}``; the server answers ``{"type": "hello", "version": 1, "pid": ...,
    "mode": ...}``. Any other first frame, another protocol or version, or a peer whose
    uid (``SO_PEERCRED``) is not allowed gets an error frame and the connection is closed.

Requests and responses
    A request is ``{"id": <int>, "op": <name>, ...arguments}``; its response carries the
    same ``id`` and either ``"ok": true`` with the op's results or ``"ok": false`` with
    ``"error": {"code", "message"}``. Requests on one connection may overlap; responses
    come back as each finishes. Closing the connection kills the commands it started
    (background jobs excepted).

    Every request but ``ping`` may name the principal it is for, ``user`` and ``agent``
    (raw ids); a workspace that names the principal (``users/{user}``) needs the ids it
    names, and sessions and jobs are kept per owner of a workspace, so the same session
    name of two users is two sessions (see :mod:`._workspaces`).

    ``ping`` -> ``{sessions, jobs, workspace_writable}``: ``workspace_writable`` says
    whether commands may write in the shared workspace (``null`` with one per principal).
    ``open`` ``{session}`` -> ``{cwd, created}``: a session keeps a working directory
    inside the workspace and exported variables from one command to the next.
    ``close`` ``{session}`` -> ``{}``: forgets it and kills its background jobs.
    ``exec`` ``{session, command, timeout, output_bytes?, background?}`` -> ``{exit_code,
    stdout, stderr, stdout_bytes, stderr_bytes, timed_out, duration, cwd, created}`` (or
    ``{job}`` for a background command); the session is opened if it is not.
    ``poll`` ``{job, wait?}`` -> ``{running, exit_code, stdout, stderr, dropped}``: output
    since the last poll, waiting up to ``wait`` seconds for some.
    ``kill`` ``{job}`` -> ``{exit_code}``.

Errors
    An ``exec`` whose command the daemon's shell policy refuses answers with the code
    ``policy`` (:data:`POLICY_REFUSED`) and the policy's reason; nothing was started.
    Frame-level problems answer with ``{"id": null, "ok": false, "error": ...}``: a frame
    that is not a JSON object (``bad_frame``; the connection stays usable), one longer than
    the maximum (``frame_too_large``) or cut short by the end of the stream
    (``truncated_frame``), after which the connection is closed.
"""

from __future__ import annotations

import errno
import json
import socket
import struct
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketAttribute

PROTOCOL = "toolcage-shell"
VERSION = 1
MAX_FRAME_BYTES = 16 * 1024 * 1024
POLICY_REFUSED = "policy"
"""The error code of a command the daemon's shell policy refuses."""
_HEADER = struct.Struct(">I")
_READ_BYTES = 65536


class ProtocolError(Exception):
    """The peer broke the protocol; ``code`` is the error code sent back."""

    def __init__(self, code: str, message: str, *, fatal: bool) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fatal = fatal
        """Whether the connection cannot continue (the stream is out of step)."""


def encode_frame(message: dict[str, Any]) -> bytes:
    """One frame holding ``message``."""
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_FRAME_BYTES:
        raise ValueError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """The object in a frame's body; :class:`ProtocolError` if it is not one."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError("bad_frame", f"frame is not UTF-8 JSON: {exc}", fatal=False) from None
    if not isinstance(message, dict):
        raise ProtocolError("bad_frame", "frame is not a JSON object", fatal=False)
    return message


class FrameStream:
    """Frames over a byte stream; sends are serialised so overlapping responses stay whole.

    Reads take whatever the stream holds (up to a whole frame, at least 64 KiB), so a
    frame usually arrives in one read, and frames that came together are split here. A
    frame is written straight to the socket as far as its buffer takes it, and only the
    rest (if any) waits on the event loop.
    """

    def __init__(self, stream: ByteStream, *, max_frame: int = MAX_FRAME_BYTES) -> None:
        self.stream = stream
        self.max_frame = max_frame
        self._buffer = bytearray()
        raw = SocketAttribute.raw_socket
        self._socket: socket.socket | None = stream.extra(raw, None)  # noqa: S610 - anyio's
        """The stream's socket, if it is one: small frames are written to it directly."""
        self._send_lock = anyio.Lock(fast_acquire=True)
        """Taken without a trip through the event loop when no other send holds it."""

    async def receive(self) -> dict[str, Any] | None:
        """The next message; ``None`` at a clean end of stream (between frames)."""
        buffer = self._buffer
        while len(buffer) < _HEADER.size:
            if not await self._fill(_HEADER.size - len(buffer)):
                if buffer:
                    raise ProtocolError(
                        "truncated_frame", "stream ended inside a frame header", fatal=True
                    )
                return None
        (length,) = _HEADER.unpack_from(buffer)
        if length == 0 or length > self.max_frame:
            raise ProtocolError(
                "frame_too_large",
                f"frame length {length} is outside 1..{self.max_frame}",
                fatal=True,
            )
        end = _HEADER.size + length
        while len(buffer) < end:
            if not await self._fill(end - len(buffer)):
                raise ProtocolError(
                    "truncated_frame", f"stream ended inside a {length}-byte frame", fatal=True
                )
        body = bytes(buffer[_HEADER.size : end])
        del buffer[:end]
        return decode_body(body)

    async def _fill(self, missing: int) -> bool:
        """Read once more into the buffer; false at the end of the stream."""
        try:
            chunk = await self.stream.receive(max(_READ_BYTES, missing))
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        self._buffer += chunk
        return True

    async def send(self, message: dict[str, Any]) -> None:
        frame = encode_frame(message)
        async with self._send_lock:
            sent = self._send_now(frame)
            if sent < len(frame):
                await self.stream.send(frame[sent:])

    def _send_now(self, frame: bytes) -> int:
        """Write what the socket takes at once (anyio's send first passes through the
        event loop); how many bytes that was."""
        if self._socket is None:
            return 0
        try:
            return self._socket.send(frame)
        except BlockingIOError:
            return 0
        except OSError as exc:
            if exc.errno == errno.EBADF:
                raise anyio.ClosedResourceError from None
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        await self.stream.aclose()


def hello() -> dict[str, Any]:
    """The client's first frame."""
    return {"type": "hello", "protocol": PROTOCOL, "version": VERSION}


def error(code: str, message: str, request_id: Any = None) -> dict[str, Any]:
    """An error response (``request_id`` ``None`` for frame-level errors)."""
    return {"id": request_id, "ok": False, "error": {"code": code, "message": message}}
