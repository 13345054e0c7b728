"""Decoding a response body's ``Content-Encoding`` without letting it grow past the cap.

httpx would decode a compressed body by itself, but each chunk whole: 64 KiB of deflated
zeros is 64 MiB in memory before any cap is looked at. The client reads the raw bytes
instead and decodes them here, asking zlib for no more than the room left under the
response cap (``max_length``); input that would decode further stays undecoded, and the
body is cut there. A decompression bomb costs the cap, not its expanded size.

``gzip`` (and ``x-gzip``) and ``deflate`` (zlib-wrapped, or raw as some servers send it)
are decoded; ``identity`` is nothing to decode. Any other coding, or more than one, is
:func:`decoder_for`'s ``None``: the client then hands the body on as it came (the
response's ``Content-Encoding`` says what it is), or refuses it when secrets are
configured, since a body it cannot read it cannot redact.
"""

from __future__ import annotations

import zlib
from typing import Protocol


class BodyDecoder(Protocol):
    """Turns raw body bytes into decoded ones, at most ``limit`` at a time."""

    def feed(self, data: bytes, limit: int) -> bytes:
        """The decoded bytes of ``data`` (after what is pending), at most ``limit``
        (which is at least 1); input that would decode further stays pending."""
        ...


class _Identity:
    """Nothing to decode: bytes pass as they come (the caller cuts them)."""

    def feed(self, data: bytes, limit: int) -> bytes:
        return data


class _Inflate:
    """gzip or deflate, through zlib, never more than ``limit`` bytes out at once."""

    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._zlib = zlib.decompressobj(wbits)
        self._pending = b""
        self._raw_fallback = raw_fallback
        self._started = False

    def feed(self, data: bytes, limit: int) -> bytes:
        data = self._pending + data
        try:
            out = self._zlib.decompress(data, limit)
        except zlib.error:
            if not self._raw_fallback or self._started:
                raise
            # "deflate" as some servers send it: raw, without the zlib wrapper
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(data, limit)
        self._started = True
        self._pending = self._zlib.unconsumed_tail
        return out


IDENTITY: BodyDecoder = _Identity()
"""The decoder of a body that is not encoded, or that is passed on as it came."""

DecodeError = zlib.error
"""Raised by :meth:`BodyDecoder.feed` for bytes that are not what their coding says."""


def decoder_for(content_encoding: str) -> BodyDecoder | None:
    """The decoder of a body sent with this ``Content-Encoding`` (empty: none sent);
    ``None``: a coding (or a chain of them) this module does not decode."""
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return IDENTITY
    if len(codings) > 1:
        return None
    if codings[0] in ("gzip", "x-gzip"):
        return _Inflate(zlib.MAX_WBITS | 16)
    if codings[0] == "deflate":
        return _Inflate(zlib.MAX_WBITS, raw_fallback=True)
    return None
