"""How the HTTP client looks host names up: apart from :mod:`._http_connect`, so that the
client can be built without loading httpcore."""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

Resolver = Callable[[str, int], Sequence[str]]
"""Looks a host name up: the IP addresses (as text) to connect to for ``(host, port)``;
raises :class:`OSError` (``socket.gaierror``) when the name does not resolve."""


def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver (``getaddrinfo``)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in infos]
