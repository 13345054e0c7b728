"""What a request brings back: the response, the failure, and reading the body.

The body is read raw and decoded here, not by httpx: httpx decodes a compressed body each
chunk whole, and 64 KiB of deflated zeros is 64 MiB in memory before any cap is looked at.
Here zlib is asked for no more than the room left under the response cap (``max_length``);
input that would decode further stays undecoded, and the body is cut there. A
decompression bomb costs the cap, not its expanded size.

``gzip`` (and ``x-gzip``) and ``deflate`` (zlib-wrapped, or raw as some servers send it)
are decoded; ``identity`` is nothing to decode. Any other coding, or more than one, is
:func:`decoder_for`'s ``None``: the body is then handed on as it came (the response's
``Content-Encoding`` says what it is), or refused when secrets are configured, since a
body the host cannot read it cannot redact.
"""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from toolcage.policies import SecretValues

from ._rate_limits import ByteMeter

if TYPE_CHECKING:
    import httpx


class HttpFailure(Exception):
    """A request that did not produce a response; ``kind`` is an ``error_type`` value."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """What came back, after redirects."""

    status: int
    """Final HTTP status code."""
    headers: tuple[tuple[str, str], ...]
    """Final response headers, in order."""
    body: bytes
    """Body, at most ``max_response_bytes`` long."""
    truncated: bool
    """Whether the body was cut at the cap."""
    size: int | None
    """Original body size when known (read fully, or from Content-Length)."""
    url: str
    """Final URL."""
    redirects: int
    """Redirects followed."""


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


def read_capped(
    response: httpx.Response,
    cap: int,
    deadline: float,
    redactor: SecretValues | None,
    meter: ByteMeter | None,
) -> tuple[bytes, bool, int | None]:
    """The body, decoded, at most ``cap`` bytes, redacted by ``redactor`` (the secrets'
    values, when any are configured). A value that starts before the cut is redacted
    whole: the read goes ``redactor.overlap`` bytes past the cap for it. A body in a coding
    that cannot be decoded comes as it is, or is refused when it would have to be
    redacted."""
    encoding = response.headers.get("content-encoding", "")
    decoder = decoder_for(encoding)
    if decoder is None:
        if redactor is not None:
            raise HttpFailure(
                "execution_error",
                f"the response body is encoded as {encoding!r} although the host asked for "
                "identity; with secrets configured a body the host cannot decode is refused",
            )
        decoder = IDENTITY
    chunks: list[bytes] = []
    got = 0
    reach = cap + redactor.overlap if redactor else cap
    try:
        for raw in response.iter_raw():
            if time.monotonic() > deadline:
                raise HttpFailure("timeout", "the call's deadline passed while reading the body")
            chunk = decoder.feed(raw, reach + 1 - got)
            if meter is not None:
                meter.count(len(chunk))
            chunks.append(chunk)
            got += len(chunk)
            if got > reach:
                declared = response.headers.get("content-length", "")
                size = int(declared) if declared.isascii() and declared.isdigit() else None
                return _redacted(b"".join(chunks), redactor)[:cap], True, size
    except DecodeError as exc:
        raise HttpFailure(
            "execution_error", f"the {encoding} response body cannot be decoded: {exc}"
        ) from None
    data = _redacted(b"".join(chunks), redactor)
    if got > cap:  # within the overlap: cut, as any body past the cap
        return data[:cap], True, got
    return data, False, got


def _redacted(data: bytes, redactor: SecretValues | None) -> bytes:
    return redactor.data(data) if redactor else data
