"""The host's HTTP client for guests, with the egress policy built into its connections.

The policy is enforced where the socket is opened, not on URL text: httpx is given an
httpcore network backend (:class:`_GuardedBackend`) that resolves the host itself, asks
:meth:`~toolcage.policies.EgressPolicy.check_address` about every address the name
resolves to, and then connects to the checked IP literal. There is no second lookup for a
rebinding DNS server to answer differently, and TLS still verifies the certificate against
the host *name* (httpcore passes the origin's name as SNI / ``server_hostname``).

Redirects are followed here, by hand, one hop at a time, so each hop goes through the same
scheme/host check and the same guarded connection; ``max_redirects`` bounds the chain.
Every wait (connect, each read) is bounded by the per-tool timeouts and by the call's
deadline, and the response body is read no further than ``max_response_bytes``.

The client runs synchronously: host functions run in the guest's worker thread.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import httpcore
import httpx
from toolcage.policies import EgressPolicy, EgressViolation

_DEFAULT_PORTS = {"http": 80, "https": 443}
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
# getaddrinfo cannot be interrupted; lookups run here so a hung resolver costs a call its
# deadline (the lookup is abandoned), never more.
_RESOLVER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="toolcage-dns")


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


class _GuardedBackend(httpcore.NetworkBackend):
    """Resolves, checks every address against the policy, connects to a checked IP."""

    def __init__(self, policy: EgressPolicy, tool: str) -> None:
        self._policy = policy
        self._tool = tool
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        lookup = _RESOLVER.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
        try:
            infos = lookup.result(timeout=timeout)
        except FutureTimeout:
            raise httpcore.ConnectTimeout(f"resolving {host!r} timed out") from None
        except (socket.gaierror, UnicodeError) as exc:
            raise HttpFailure("execution_error", f"cannot resolve {host!r}: {exc}") from None
        addresses = []
        for *_, sockaddr in infos:
            address = ipaddress.ip_address(str(sockaddr[0]))
            # All must pass: refusing the whole name when any answer is private keeps a
            # mixed answer from being a coin toss between a public and a private host.
            self._policy.check_address(self._tool, address, port)
            if address not in addresses:
                addresses.append(address)
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except httpcore.ConnectError as exc:
                last = exc
        raise last or HttpFailure("execution_error", f"no address for {host!r}")

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise HttpFailure("permission_denied", "unix sockets are not reachable")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class EgressClient:
    """Sends guests' requests under the egress policy.

    >>> client = EgressClient(EgressPolicy(EgressConfig()))
    >>> client.request("http_request", "GET", "https://example.com/", {}, b"", deadline)
    """

    def __init__(self, policy: EgressPolicy, *, verify: ssl.SSLContext | bool = True) -> None:
        self._policy = policy
        self._ssl = httpx.create_ssl_context(verify=verify) if verify is not False else None
        self._verify = verify

    def request(
        self,
        tool: str,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        deadline: float,
    ) -> HttpResponse:
        """Send one request, following redirects; raise :class:`HttpFailure` on failure."""
        try:
            return self._request(tool, method, url, headers, body, deadline)
        except EgressViolation as exc:
            raise HttpFailure("permission_denied", f"egress policy: {exc}") from None

    def _request(
        self,
        tool: str,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        deadline: float,
    ) -> HttpResponse:
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
            network_backend=_GuardedBackend(self._policy, tool),
        )
        send_headers = {"accept-encoding": "identity", **headers}
        with httpx.Client(transport=transport, trust_env=False, follow_redirects=False) as client:
            for hop in range(rules.max_redirects + 1):
                target = _parse(url)
                self._policy.check_target(
                    tool,
                    target.scheme,
                    target.host,
                    target.port or _DEFAULT_PORTS.get(target.scheme),
                )
                timeout = _timeout(rules.connect_timeout, rules.read_timeout, deadline)
                try:
                    request = client.build_request(
                        method, target, headers=send_headers, content=body or None, timeout=timeout
                    )
                    response = client.send(request, stream=True)
                except httpx.HTTPError as exc:
                    raise _translate(exc, url) from None
                try:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        next_url = target.join(location)
                        if response.status_code == 303 or (
                            response.status_code in (301, 302) and method == "POST"
                        ):
                            method, body = ("HEAD" if method == "HEAD" else "GET"), b""
                        if next_url.host != target.host:
                            send_headers = {
                                k: v
                                for k, v in send_headers.items()
                                if k.lower() not in ("authorization", "cookie")
                            }
                        url = str(next_url)
                        continue
                    data, truncated, size = _read_capped(
                        response, rules.max_response_bytes, deadline
                    )
                    return HttpResponse(
                        status=response.status_code,
                        headers=tuple(response.headers.multi_items()),
                        body=data,
                        truncated=truncated,
                        size=size,
                        url=str(target),
                        redirects=hop,
                    )
                except httpx.HTTPError as exc:
                    raise _translate(exc, url) from None
                finally:
                    response.close()
        raise HttpFailure(
            "execution_error", f"more than {rules.max_redirects} redirects (last: {url})"
        )


def _parse(url: str) -> httpx.URL:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise HttpFailure("validation_error", f"not a valid URL: {exc}") from None
    return parsed


def _timeout(connect: float, read: float, deadline: float) -> httpx.Timeout:
    left = deadline - time.monotonic()
    if left <= 0:
        raise HttpFailure("timeout", "the call's deadline passed before the request was sent")
    return httpx.Timeout(
        connect=min(connect, left), read=min(read, left), write=min(read, left), pool=left
    )


def _read_capped(
    response: httpx.Response, cap: int, deadline: float
) -> tuple[bytes, bool, int | None]:
    chunks: list[bytes] = []
    got = 0
    for chunk in response.iter_bytes():
        if time.monotonic() > deadline:
            raise HttpFailure("timeout", "the call's deadline passed while reading the body")
        chunks.append(chunk)
        got += len(chunk)
        if got > cap:
            declared = response.headers.get("content-length")
            size = int(declared) if declared and declared.isdigit() else None
            return b"".join(chunks)[:cap], True, size
    return b"".join(chunks), False, got


def _translate(exc: httpx.HTTPError, url: str) -> HttpFailure:
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
