"""The forms a secret's value takes in text, and finding them.

A value betrays itself in any of these forms, each looked for wherever a value is redacted
and wherever the host checks that a request does not carry a value to a host it is not
bound to (:meth:`SecretValues.carried`):

- as it is;
- percent-encoded the way each part of a URL encodes it -- a path segment, a path, a query
  (also with ``+`` for a space, as form encoding writes it), a fragment, the userinfo --,
  the way common encoders do (every reserved character, JavaScript's
  ``encodeURIComponent`` and ``encodeURI``, Python's ``quote``), and all of it encoded
  again, with the hex digits in upper and in lower case;
- JSON-escaped (``\\"``, ``\\\\``, ``\\/``);
- base64-encoded, standard and URL-safe: the three alignments a value can have inside a
  longer base64 text (``Basic`` credentials, JSON web tokens) each leave a run of
  characters that depends on the value alone, and that run is what is looked for.

The check of an outgoing request goes further than the list: it also reads what it checks
percent-decoded (twice over, for a value encoded twice), form-decoded and JSON-unescaped,
so a value with only some of its characters encoded is found as well. Redaction can only
replace what it finds as written, so it relies on the list.

With a handful of secrets a plain search per form is cheaper than building an automaton.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Collection, Iterable
from urllib.parse import quote, quote_plus, unquote, unquote_plus, unquote_to_bytes

_SUB_DELIMS = "!$&'()*+,;="
_URL_SAFE = (
    "",  # every reserved character encoded
    "/",  # Python's quote
    _SUB_DELIMS + ":@",  # a path segment
    _SUB_DELIMS + ":@/",  # a path
    _SUB_DELIMS + ":@/?",  # a query or a fragment
    _SUB_DELIMS,  # a user name
    _SUB_DELIMS + ":",  # a password
    "!*'()",  # encodeURIComponent
    ";,/?:@&=+$#!*'()",  # encodeURI
)
"""The characters each way of percent-encoding leaves as they are (beside letters, digits
and ``-._~``)."""
_HEX = re.compile(r"%[0-9A-F]{2}")
_JSON_ESCAPE = re.compile(r'\\u([0-9a-fA-F]{4})|\\(["\\/])')
_JSON_ESCAPE_BYTES = re.compile(rb'\\u([0-9a-fA-F]{4})|\\(["\\/])')
_DECODE_ROUNDS = 2


def secret_forms(value: str) -> frozenset[bytes]:
    """The byte strings that betray ``value`` (see the module docstring)."""
    raw = value.encode("ascii")
    forms = {raw}
    for safe in _URL_SAFE:
        for encoded in (quote(value, safe=safe), quote_plus(value, safe=safe)):
            lower = _HEX.sub(lambda m: m.group(0).lower(), encoded)
            forms |= {encoded.encode(), lower.encode()}
            # encoded again, as a whole (a URL put in a query parameter)
            forms |= {quote(encoded, safe="").encode(), quote(lower, safe="").encode()}
    escaped = json.dumps(value)[1:-1]
    forms |= {escaped.encode(), escaped.replace("/", "\\/").encode()}
    for offset in range(3):
        padded = base64.b64encode(b"\0" * offset + raw).rstrip(b"=")
        start = -(-8 * offset // 6)  # the first character made of the value's bits only
        end = 8 * (offset + len(raw)) // 6
        run = padded[start:end]
        forms |= {run, run.translate(bytes.maketrans(b"+/", b"-_"))}
    return frozenset(forms)


class SecretValues:
    """Named secret values and every form of each, to redact or to find.

    >>> values = SecretValues([("api", "s3cr3t-value")])
    >>> values.text("token=s3cr3t-value")
    'token=[redacted secret api]'
    """

    def __init__(self, values: Iterable[tuple[str, str]] = ()) -> None:
        self._forms = {name: secret_forms(value) for name, value in values}
        pairs = [(form, name) for name, forms in self._forms.items() for form in forms]
        # Longest first, so a value is replaced whole before a shorter form inside it.
        pairs.sort(key=lambda pair: len(pair[0]), reverse=True)
        self._bytes = [(form, f"[redacted secret {name}]".encode()) for form, name in pairs]
        self._text = [(f.decode("ascii"), m.decode("ascii")) for f, m in self._bytes]
        self.overlap = max((len(form) for form, _ in pairs), default=1) - 1
        """Characters past a cut that a form starting before the cut can reach."""

    def __bool__(self) -> bool:
        return bool(self._forms)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._forms)

    def data(self, data: bytes) -> bytes:
        """``data`` with every form of every value replaced by ``[redacted secret NAME]``."""
        for form, marker in self._bytes:
            if form in data:
                data = data.replace(form, marker)
        return data

    def text(self, text: str) -> str:
        """``text`` with every form of every value replaced by ``[redacted secret NAME]``."""
        for form, marker in self._text:
            if form in text:
                text = text.replace(form, marker)
        return text

    def carried(self, among: Collection[str], texts: Iterable[str], body: bytes) -> str | None:
        """The name of a secret in ``among`` whose value ``texts`` (a URL, header names and
        values) or ``body`` carry in any form, decoded or not; ``None``: none does."""
        names = [name for name in self._forms if name in among]
        if not names:
            return None
        views = [view.encode("utf-8", "replace") for view in _text_views("\n".join(texts))]
        views += _byte_views(body)
        for name in names:
            for form in self._forms[name]:
                if any(form in view for view in views):
                    return name
        return None


def _text_views(text: str) -> list[str]:
    """``text`` and its percent-decoded, form-decoded and JSON-unescaped readings."""
    views = [text]
    if "%" in text or "+" in text:
        decoded = text
        for _ in range(_DECODE_ROUNDS):
            decoded = unquote(decoded)
            views.append(decoded)
        views.append(unquote_plus(text))
    if "\\" in text:
        views += [_JSON_ESCAPE.sub(_unescape, view) for view in list(views)]
    return views


def _byte_views(body: bytes) -> list[bytes]:
    """``body`` and its percent-decoded, form-decoded and JSON-unescaped readings."""
    if not body:
        return []
    views = [body]
    if b"%" in body or b"+" in body:
        decoded = body
        for _ in range(_DECODE_ROUNDS):
            decoded = unquote_to_bytes(decoded)
            views.append(decoded)
        views.append(unquote_to_bytes(body.replace(b"+", b" ")))
    if b"\\" in body:
        views += [_JSON_ESCAPE_BYTES.sub(_unescape_bytes, view) for view in list(views)]
    return views


def _unescape(match: re.Match[str]) -> str:
    return match[2] if match[2] is not None else chr(int(match[1], 16))


def _unescape_bytes(match: re.Match[bytes]) -> bytes:
    if match[2] is not None:
        return match[2]
    code = int(match[1], 16)
    return bytes([code]) if code < 0x80 else match[0]
