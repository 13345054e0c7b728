"""The ``http`` binding: guests send HTTP requests through the egress-checked client.

Request (JSON)::

    {"method": "GET", "url": "https://...", "headers": {"name": "value"}, "body": "text",
     "raw": false}

Result::

    {"ok": true, "status": 200, "headers": {...}, "content_type": "text/html",
     "body": "...", "body_encoding": "text" | "base64", "truncated": false,
     "size": 1234, "url": "final URL", "redirects": 0}

A header value may name an operator's secret as ``{{secret:NAME}}``; the client puts the
value there on hops bound to it and redacts it from everything that comes back (see
:mod:`._http_client` and :mod:`toolcage.policies._secret_policy`).

Text bodies (``text/*``, JSON, XML, JavaScript, or any body that is valid UTF-8) arrive
decoded to text using the declared charset (undecodable bytes become U+FFFD); anything
else arrives base64-encoded, so the guest can tell binary content apart and refuse it.
With ``"raw": true`` every body arrives base64-encoded, its bytes as sent (a guest that
finds the charset in the document itself decodes them).
"""

from __future__ import annotations

import base64
import codecs
import string
from typing import Any

import wasmtime
from toolcage.policies import EgressPolicy, SecretPolicy

from ._abi import (
    AbiError,
    GuestError,
    failed,
    module_name,
    ok,
)
from ._base import CallState
from ._http_client import EgressClient
from ._http_response import HttpFailure, HttpResponse
from ._rate_limits import ByteMeter, RateLimiter
from ._results import define_json_call

# Framing and routing headers are the client's to set: a guest choosing them could
# desynchronise the connection (smuggling) or mislabel where the request goes.
_RESERVED_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"}
)
METHODS = frozenset({"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH"})
READ_METHODS = frozenset({"GET", "HEAD"})
"""The methods of a network read: all a :meth:`HttpBinding.reading` binding sends (and
never with a body)."""
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")
_TOKEN = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")
_VALUE = frozenset(map(chr, range(0x20, 0x7F))) | {"\t"}
_TEXT_SUFFIXES = ("+json", "+xml", "javascript", "ecmascript", "x-www-form-urlencoded")


class HttpBinding:
    """Capability ``http``: ``toolcage_http_v1.request`` / ``.result``.

    Its :meth:`reading` form, what a worker session's guests get, sends only network reads:
    ``GET`` or ``HEAD`` without a body, through the same egress policy, secrets and byte
    quotas; any other request is answered ``permission_denied`` and never sent.
    """

    name = "http"

    def __init__(
        self,
        client: EgressClient,
        secrets: SecretPolicy | None = None,
        rate_limits: RateLimiter | None = None,
        *,
        reads_only: bool = False,
    ) -> None:
        self._client = client
        self._secrets = secrets or SecretPolicy()
        self._rate_limits = rate_limits
        self._reads_only = reads_only
        if reads_only:
            # Its own name: the runner keys a linked module by its bindings' names.
            self.name = "http:read"

    def reading(self) -> HttpBinding:
        """This binding in its read-only form (see the class docstring)."""
        return HttpBinding(self._client, self._secrets, self._rate_limits, reads_only=True)

    @classmethod
    def from_policy(
        cls,
        policy: EgressPolicy,
        secrets: SecretPolicy | None = None,
        rate_limits: RateLimiter | None = None,
    ) -> HttpBinding:
        return cls(EgressClient(policy, secrets=secrets), secrets, rate_limits)

    def describe_secrets(self, *, takes_headers: bool) -> str:
        """What a tool's description should add about the secrets (names, never values);
        ``takes_headers``: the tool passes the model's headers, placeholders included."""
        return self._secrets.describe(placeholders=takes_headers)

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_call(linker, module_name("http"), "request", self.answer)

    def answer(self, state: CallState, req: dict[str, Any]) -> dict[str, Any]:
        """Run one decoded request of the call ``state`` (its deadline, its byte quota)."""
        return self.perform(
            state.tool_name, req, state.deadline, meter_for(self._rate_limits, state)
        )

    def perform(
        self, tool: str, req: dict[str, Any], deadline: float, meter: ByteMeter | None = None
    ) -> dict[str, Any]:
        """Run one decoded request (its response bytes counted by ``meter``); every outcome
        is a result object."""
        method = str(req.get("method", "GET")).upper()
        url, headers, body = req.get("url"), req.get("headers") or {}, req.get("body") or ""
        if not isinstance(url, str) or not isinstance(body, str) or not isinstance(headers, dict):
            raise GuestError(AbiError.INVALID)
        if method not in METHODS:
            return failed("validation_error", f"method {method!r} is not one of {sorted(METHODS)}")
        if self._reads_only and (method not in READ_METHODS or body):
            sent = f"{method} with a body" if method in READ_METHODS else method
            return failed(
                "permission_denied",
                f"a worker session only reads from the network (GET or HEAD without a body), "
                f"not {sent}",
            )
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            return failed("validation_error", "header names and values must be strings")
        problem = next(filter(None, (_header_problem(k, v) for k, v in headers.items())), None)
        if problem is not None:
            return failed("validation_error", problem)
        reserved = sorted(k for k in headers if k.lower() in _RESERVED_HEADERS)
        if reserved:
            return failed("validation_error", f"headers set by the host: {', '.join(reserved)}")
        try:
            data = body.encode("utf-8")
        except UnicodeEncodeError:
            return failed("validation_error", "the body is not valid Unicode text")
        try:
            response = self._client.request(tool, method, url, headers, data, deadline, meter)
        except HttpFailure as exc:
            return failed(exc.kind, exc.message)
        return _encode(response, raw=req.get("raw") is True)


def meter_for(rate_limits: RateLimiter | None, state: CallState) -> ByteMeter | None:
    """The byte meter of a request of the running call, when a byte quota applies."""
    if rate_limits is None:
        return None
    return rate_limits.meter(state.tool_name, state.principal)


def _header_problem(name: str, value: str) -> str | None:
    """Why a header cannot be sent as given (HTTP allows only these characters)."""
    if not name or not set(name) <= _TOKEN:
        return f"header name {name!r} is not an HTTP token (letters, digits, !#$%&'*+-.^_`|~)"
    if not set(value) <= _VALUE:
        return f"header {name!r}: the value holds a character HTTP does not allow (visible ASCII)"
    return None


def _encode(response: HttpResponse, *, raw: bool = False) -> dict[str, Any]:
    headers: dict[str, str] = {}
    for name, value in response.headers:
        key = name.lower()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    content_type = headers.get("content-type", "")
    text = None if raw else _as_text(response.body, content_type)
    return ok(
        status=response.status,
        headers=headers,
        content_type=content_type.split(";")[0].strip().lower(),
        body=text if text is not None else base64.b64encode(response.body).decode("ascii"),
        body_encoding="text" if text is not None else "base64",
        truncated=response.truncated,
        size=response.size,
        url=response.url,
        redirects=response.redirects,
    )


def _as_text(body: bytes, content_type: str) -> str | None:
    mime, _, params = content_type.partition(";")
    mime = mime.strip().lower()
    charset = None
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset":
            charset = value.strip().strip('"').lower()
    textual = mime.startswith(_TEXT_TYPES) or mime.endswith(_TEXT_SUFFIXES)
    if charset:
        try:
            codecs.lookup(charset)
        except LookupError:
            charset = None
    if textual:
        return body.decode(charset or "utf-8", errors="replace")
    if not mime:
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None
