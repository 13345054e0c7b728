"""Connections under the egress policy: resolve, check every address, connect to it.

The policy is enforced where the socket is opened, not on URL text: httpx is given this
httpcore network backend (:class:`GuardedBackend`), which resolves the host itself, asks
:meth:`~toolcage.policies.EgressPolicy.check_address` about every address the name
resolves to, and then connects to the checked IP literal. There is no second lookup for a
rebinding DNS server to answer differently, and TLS still verifies the certificate against
the host *name* (httpcore passes the origin's name as SNI / ``server_hostname``). Only a
host that passed :meth:`~toolcage.policies.EgressPolicy.check_host` (a well-formed DNS
name) is ever given to the resolver; an IP literal is never looked up at all.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import httpcore
from toolcage.policies import EgressPolicy

from ._http_resolve import Resolver
from ._http_response import HttpFailure

# getaddrinfo cannot be interrupted; lookups run here so a hung resolver costs a call its
# deadline (the lookup is abandoned), never more.
_RESOLVER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="toolcage-dns")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ip_literal(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


class GuardedBackend(httpcore.NetworkBackend):
    """Resolves, checks every address against the policy, connects to a checked IP."""

    def __init__(self, policy: EgressPolicy, tool: str, resolver: Resolver) -> None:
        self._policy = policy
        self._tool = tool
        self._resolver = resolver
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = []
        for address in self._resolve(host, port, timeout):
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

    def _resolve(self, host: str, port: int, timeout: float | None) -> list[IPAddress]:
        literal = _ip_literal(host)
        if literal is not None:
            return [literal]
        self._policy.check_host(host)  # nothing malformed reaches the resolver
        lookup = _RESOLVER.submit(self._resolver, host, port)
        try:
            answers = lookup.result(timeout=timeout)
        except FutureTimeout:
            raise httpcore.ConnectTimeout(f"resolving {host!r} timed out") from None
        except (OSError, UnicodeError) as exc:
            raise HttpFailure("execution_error", f"cannot resolve {host!r}: {exc}") from None
        addresses = [_ip_literal(answer) for answer in answers]
        found = [address for address in addresses if address is not None]
        if not found:
            raise HttpFailure("execution_error", f"cannot resolve {host!r}: no address")
        return found

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise HttpFailure("permission_denied", "unix sockets are not reachable")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
