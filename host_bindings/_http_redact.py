"""Redaction of secrets' values from what a request brings back.

Every response body, response header, final URL and error message of the ``http`` binding
passes through :class:`Redactor` before a guest sees it, so a server that echoes a
credential (or an error that quotes a URL with one in its query) shows
``[redacted secret NAME]`` instead. Each value is looked for as sent, percent-encoded
(``%XX`` in either case, and form encoding), JSON-escaped, and base64-encoded: the three
alignments a value can have inside a longer base64 text (``Basic`` credentials, JSON web
tokens) each leave a run of characters that depends on the value alone, and that run is
what is looked for.

With a handful of secrets a plain search per form is cheaper than building an automaton.
Bodies are redacted whole, after they are read: a value split across two reads is found.

httpcore logs every response's headers at ``DEBUG``; :func:`redact_http_logs` puts a filter
on its loggers that redacts those records too. The filter runs only for records that are
made, that is only while someone has turned httpcore's debug logging on.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import threading
import weakref
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

from toolcage.policies import Secret


def _forms(value: str) -> set[bytes]:
    """The byte strings that betray ``value``: as sent, URL-encoded (either case of hex
    digits), JSON-escaped, base64-encoded."""
    raw = value.encode("ascii")
    forms = {raw, *_percent(quote(value, safe="")), *_percent(quote_plus(value, safe=""))}
    escaped = json.dumps(value)[1:-1]
    forms |= {escaped.encode(), escaped.replace("/", "\\/").encode()}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).rstrip(b"=")
        start = -(-8 * offset // 6)  # the first character made of the value's bits only
        end = 8 * (offset + len(raw)) // 6
        run = encoded[start:end]
        forms |= {run, run.translate(bytes.maketrans(b"+/", b"-_"))}
    return forms


def _percent(encoded: str) -> set[bytes]:
    """``encoded`` with its ``%XX`` escapes in upper and in lower case."""
    lower = re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)
    return {encoded.encode(), lower.encode()}


class Redactor:
    """Replaces every known form of each secret's value.

    >>> Redactor([secret]).text("token=s3cr3t-value")
    'token=[redacted secret api]'
    """

    def __init__(self, secrets: Iterable[Secret]) -> None:
        pairs = [(form, secret.name) for secret in secrets for form in _forms(secret.value)]
        # Longest first, so a value is replaced whole before a shorter form inside it.
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        self._bytes = [(form, f"[redacted secret {name}]".encode()) for form, name in pairs]
        self._text = [(f.decode("ascii"), m.decode("ascii")) for f, m in self._bytes]
        self.overlap = max((len(form) for form, _ in pairs), default=1) - 1
        """Bytes past a cut that a value starting before the cut can reach."""

    def __bool__(self) -> bool:
        return bool(self._bytes)

    def data(self, data: bytes) -> bytes:
        for form, marker in self._bytes:
            if form in data:
                data = data.replace(form, marker)
        return data

    def text(self, text: str) -> str:
        for form, marker in self._text:
            if form in text:
                text = text.replace(form, marker)
        return text


_HTTPCORE_LOGGERS = (
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)


class _RedactingFilter(logging.Filter):
    """Redacts the records of httpcore's loggers with every live :class:`Redactor`."""

    def __init__(self) -> None:
        super().__init__()
        self.redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()
        self.installed = False
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        with self.lock:
            redactors = list(self.redactors)
        if redactors:
            message = redacted = record.getMessage()
            for redactor in redactors:
                redacted = redactor.text(redacted)
            if redacted != message:
                record.msg, record.args = redacted, None
        return True


_FILTER = _RedactingFilter()


def redact_http_logs(redactor: Redactor) -> None:
    """Redact httpcore's log records with ``redactor`` for as long as it lives."""
    with _FILTER.lock:
        if not _FILTER.installed:
            for name in _HTTPCORE_LOGGERS:
                logging.getLogger(name).addFilter(_FILTER)
            _FILTER.installed = True
        _FILTER.redactors.add(redactor)
