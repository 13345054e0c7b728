"""The host's HTTP client for guests, with the egress policy built into its connections.

The policy is enforced where the socket is opened, not on URL text: every hop connects
through :class:`~._http_connect.GuardedBackend`, which resolves the host itself and checks
every address before it connects to one.

Redirects are followed here, by hand, one hop at a time, so each hop goes through the same
scheme/host check and the same guarded connection; ``max_redirects`` bounds the chain. A
``Location`` that is not a URL ends the request with an error naming it.
Every wait (connect, each read) is bounded by the per-tool timeouts and by the call's
deadline, and the response body is read no further than ``max_response_bytes`` -- decoded
bytes, for a compressed body, which is decoded here a bounded step at a time
(:mod:`._http_response`), so a decompression bomb costs the cap and no more.

Secrets (:class:`~toolcage.policies.SecretPolicy`) are applied hop by hop, after the hop's
egress check and on the URL that hop sends: each hop starts again from the guest's headers,
so a redirect to a host, path, method or scheme a secret is not bound to carries none of
it, and one back to a bound host carries it again; a hop whose URL, headers or body holds
an unbound secret's value in any form is refused. What comes back -- body, headers, final
URL, error messages -- is redacted (:class:`~toolcage.policies.SecretValues`) before anyone
sees it. With secrets configured the client asks for ``Accept-Encoding: identity`` whatever
the guest asked (so compression never hides a value from redaction); a body that comes
compressed all the same is decoded before it is redacted, and one in a coding the client
cannot decode is refused.

The client runs synchronously: host functions run in the guest's worker thread. httpx and
httpcore are imported by the first request, not with this module: a runtime whose guests
send none does not load them.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from toolcage.policies import (
    EgressPolicy,
    EgressViolation,
    Redactor,
    SecretMisuse,
    SecretPolicy,
    SecretValues,
    SecretViolation,
)
from toolcage.policies._log_redaction import redact_logs
from toolcage.policies._secret_policy import origin

from ._base import current_call
from ._http_resolve import Resolver, system_resolver
from ._http_response import HttpFailure, HttpResponse, read_capped
from ._rate_limits import ByteMeter, RateLimited
from ._store import StoreError

if TYPE_CHECKING:
    import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_HEADERS = {"accept": "*/*", "accept-encoding": "identity"}
"""With ``user-agent: python-httpx/<version>``, added by the first request."""


class EgressClient:
    """Sends guests' requests under the egress policy.

    >>> client = EgressClient(EgressPolicy(EgressConfig()))
    >>> client.request("http_request", "GET", "https://example.com/", {}, b"", deadline)

    ``resolver`` replaces the system's name lookup (a test can answer from a table);
    ``secrets`` are the credentials the client adds where they are bound.
    """

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        verify: ssl.SSLContext | bool = True,
        resolver: Resolver = system_resolver,
        secrets: SecretPolicy | None = None,
    ) -> None:
        self._policy = policy
        self._secrets = secrets if secrets else None
        self._redactor = secrets.values if secrets else SecretValues()
        """Every form of every secret's value: what is redacted from what comes back."""
        self._log_redactor = Redactor(secrets=self._redactor)
        if self._redactor:  # httpcore logs headers at DEBUG; they are redacted at the source
            redact_logs(self._log_redactor)
        self._ssl_context: ssl.SSLContext | None = None
        self._ssl_lock = threading.Lock()
        self._verify = verify
        self._resolver = resolver

    @property
    def _ssl(self) -> ssl.SSLContext | None:
        """The TLS context, made on the first request (loading the CA store takes tens of
        milliseconds, which a runtime that sends no request does not spend)."""
        if self._ssl_context is None and self._verify is not False:
            import httpx  # on the first request (see the module docstring)

            with self._ssl_lock:
                if self._ssl_context is None:
                    self._ssl_context = httpx.create_ssl_context(verify=self._verify)
        return self._ssl_context

    def request(
        self,
        tool: str,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        deadline: float,
        meter: ByteMeter | None = None,
    ) -> HttpResponse:
        """Send one request, following redirects; raise :class:`HttpFailure` on failure.

        ``meter`` counts the response's bytes against byte quotas: a spent quota refuses
        the request, and a response that would overspend one is cut (``permission_denied``
        both)."""
        try:
            if meter is not None:
                meter.start()
            response = self._request(tool, method, url, headers, body, deadline, meter)
        except EgressViolation as exc:
            _report_egress(False, str(exc))
            raise self._failure("permission_denied", f"egress policy: {exc}") from None
        except SecretViolation as exc:
            raise self._failure("permission_denied", f"secrets: {exc}") from None
        except SecretMisuse as exc:
            raise self._failure("validation_error", f"secrets: {exc}") from None
        except RateLimited as exc:
            _report_decision("rate_limit", False, exc.message)
            raise HttpFailure("permission_denied", exc.message) from None
        except StoreError as exc:
            raise HttpFailure("execution_error", f"byte quotas cannot be counted: {exc}") from None
        except HttpFailure as exc:
            if not self._redactor:
                raise
            raise self._failure(exc.kind, exc.message) from None
        except Exception as exc:
            if not self._redactor:
                raise
            # An unforeseen error's text could quote a value; the binding's guard would log
            # it whole. With secrets configured it becomes a redacted failure instead.
            message = f"{url}: {type(exc).__name__}: {exc}"
            raise self._failure("execution_error", message) from None
        finally:
            if meter is not None:
                meter.close()
        if not self._redactor:
            return response
        return HttpResponse(
            status=response.status,
            headers=tuple(
                (self._redactor.text(k), self._redactor.text(v)) for k, v in response.headers
            ),
            body=response.body,  # redacted while read, before the cut (see _read_capped)
            truncated=response.truncated,
            size=response.size,
            url=self._redactor.text(response.url),
            redirects=response.redirects,
        )

    def _failure(self, kind: str, message: str) -> HttpFailure:
        return HttpFailure(kind, self._redactor.text(message) if self._redactor else message)

    def _request(
        self,
        tool: str,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        deadline: float,
        meter: ByteMeter | None,
    ) -> HttpResponse:
        import httpcore  # on the first request (see the module docstring)
        import httpx

        from ._http_connect import GuardedBackend  # an httpcore backend

        rules = self._policy.rules_for(tool)
        if len(body) > rules.max_request_bytes:
            raise HttpFailure(
                "validation_error",
                f"request body is {len(body)} bytes; the limit is {rules.max_request_bytes}",
            )
        transport = httpx.HTTPTransport(verify=self._ssl if self._ssl else False)
        # httpx has no public hook for the network backend; the pool it builds is replaced
        # by an equivalent one whose backend enforces the policy.
        transport._pool = httpcore.ConnectionPool(
            ssl_context=self._ssl,
            max_connections=4,
            network_backend=GuardedBackend(self._policy, tool, self._resolver),
        )
        send_headers = {
            **_DEFAULT_HEADERS,
            "user-agent": f"python-httpx/{httpx.__version__}",
            **headers,
        }
        if self._secrets is not None:
            # A body the host cannot read it cannot redact: the guest does not choose
            # compression while secrets may be echoed.
            send_headers = {k: v for k, v in send_headers.items() if k.lower() != "accept-encoding"}
            send_headers["accept-encoding"] = "identity"
        target = self._parse(url)
        if self._secrets is not None:
            self._secrets.check_request(url, body)
        secure = False  # whether an earlier hop went over https
        # The transport, not httpx.Client: the client parses a redirect's Location itself,
        # before handing the response back, and its errors would escape untranslated.
        with transport:
            for hop in range(rules.max_redirects + 1):
                host = target.raw_host.decode("ascii", "replace")
                port = _DEFAULT_PORTS.get(target.scheme) if target.port is None else target.port
                self._policy.check_target(tool, target.scheme, host, port)
                _report_egress(True, f"{method} {target.scheme}://{host}:{port}")
                url = str(target)
                hop_target, hop_headers = target, send_headers
                if self._secrets is not None and port is not None:
                    hop_target, hop_headers = _with_secrets(
                        self._secrets,
                        method,
                        target,
                        host,
                        port,
                        send_headers,
                        body,
                        first=hop == 0,
                        secure=secure,
                    )
                secure = secure or target.scheme == "https"
                timeout = _timeout(rules.connect_timeout, rules.read_timeout, deadline)
                try:
                    request = httpx.Request(
                        method,
                        hop_target,
                        headers=hop_headers,
                        content=body or None,
                        extensions={"timeout": timeout.as_dict()},
                    )
                    response = transport.handle_request(request)
                except httpx.HTTPError as exc:
                    raise _translate(exc, url) from None
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        next_target = self._redirect(target, location)
                        if response.status_code == 303 or (
                            response.status_code in (301, 302) and method == "POST"
                        ):
                            method, body = ("HEAD" if method == "HEAD" else "GET"), b""
                        if next_target.raw_host != target.raw_host:
                            send_headers = {
                                k: v
                                for k, v in send_headers.items()
                                if k.lower() not in ("authorization", "cookie")
                            }
                        target = next_target
                        continue
                    data, truncated, size = read_capped(
                        response,
                        rules.max_response_bytes,
                        deadline,
                        self._redactor or None,
                        meter,
                    )
                    return HttpResponse(
                        status=response.status_code,
                        headers=tuple(response.headers.multi_items()),
                        body=data,
                        truncated=truncated,
                        size=size,
                        url=url,
                        redirects=hop,
                    )
                except httpx.HTTPError as exc:
                    raise _translate(exc, url) from None
                finally:
                    response.close()
        raise HttpFailure(
            "execution_error", f"more than {rules.max_redirects} redirects (last: {target})"
        )

    def _parse(self, url: str) -> httpx.URL:
        """``url`` as the client will send it; a malformed host is the policy's to refuse."""
        import httpx  # on the first request (see the module docstring)

        try:
            return httpx.URL(url)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            self._refuse_malformed_host(url)
            raise HttpFailure("validation_error", f"not a valid URL: {exc}") from None

    def _redirect(self, target: httpx.URL, location: str) -> httpx.URL:
        """The next hop's URL; a ``Location`` that is not one is an error naming it."""
        import httpx  # on the first request (see the module docstring)

        try:
            parsed = httpx.URL(location)  # the whole Location must parse, then resolve
            if parsed.scheme in _DEFAULT_PORTS and not parsed.host:
                raise httpx.InvalidURL(f"an {parsed.scheme} URL without a host")
            return parsed if parsed.is_absolute_url else target.join(parsed)
        except (httpx.InvalidURL, TypeError, ValueError) as exc:
            self._refuse_malformed_host(location)
            raise HttpFailure(
                "execution_error",
                f"{target}: invalid redirect: the Location {location!r} is not a URL ({exc})",
            ) from None

    def _refuse_malformed_host(self, text: str) -> None:
        """Refuse by policy a URL httpx cannot parse because of its host's syntax."""
        try:
            host = urlsplit(text).hostname
        except ValueError:
            return
        if host:
            self._policy.check_host(host)


def _with_secrets(
    secrets: SecretPolicy,
    method: str,
    target: httpx.URL,
    host: str,
    port: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    first: bool,
    secure: bool,
) -> tuple[httpx.URL, dict[str, str]]:
    """The URL and headers this hop sends, with the secrets it is bound to."""
    path = target.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
    hop = secrets.for_hop(
        method,
        target.scheme,
        host,
        port,
        path,
        headers,
        first_hop=first,
        downgraded=secure and target.scheme != "https",
    )
    sent = target
    for name, value in hop.query:
        sent = sent.copy_set_param(name, value)
    where = origin(target.scheme, host, port) + path
    texts = [str(sent), *hop.headers.keys(), *hop.headers.values()]
    secrets.refuse_unbound_values(hop.bound, where, texts, body)
    return sent, hop.headers


def _report_egress(allowed: bool, reason: str) -> None:
    """Tell whatever observes the running call what the egress policy decided."""
    _report_decision("egress", allowed, reason)


def _report_decision(policy: str, allowed: bool, reason: str) -> None:
    """Tell whatever observes the running call what ``policy`` decided."""
    state = current_call.get(None)
    if state is not None and state.decide is not None:
        state.decide(policy, allowed, reason)


def _timeout(connect: float, read: float, deadline: float) -> httpx.Timeout:
    import httpx  # on the first request (see the module docstring)

    left = deadline - time.monotonic()
    if left <= 0:
        raise HttpFailure("timeout", "the call's deadline passed before the request was sent")
    return httpx.Timeout(
        connect=min(connect, left), read=min(read, left), write=min(read, left), pool=left
    )


def _translate(exc: httpx.HTTPError, url: str) -> HttpFailure:
    import httpx  # on the first request (see the module docstring)

    if isinstance(exc, httpx.TimeoutException):
        return HttpFailure("timeout", f"{url}: timed out ({type(exc).__name__})")
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return HttpFailure("execution_error", f"{url}: TLS error: {cause}")
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.RemoteProtocolError) and "location header" in str(exc):
        return HttpFailure("execution_error", f"{url}: invalid redirect: {exc}")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return HttpFailure("validation_error", f"{url}: {exc}")
    return HttpFailure("execution_error", f"{url}: {type(exc).__name__}: {exc}")
