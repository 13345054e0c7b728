"""The transports of ``toolcage mcp``: stdio, and streamable HTTP behind a bearer token.

Over HTTP the server binds 127.0.0.1 unless told otherwise; any other address needs a token
(``[mcp.serve]`` in the config, or ``TOOLCAGE_MCP_TOKEN``), and a token, once given, is
required on every request whatever the address. Host and Origin headers are checked against
the bound address (DNS rebinding: a web page must not reach a local server under a name it
controls). The socket is bound before the server starts, so port 0 works; the URL is printed
to stderr once the socket listens
(a client that connects before the server starts waits in the backlog).
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TextIO

import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from ._errors import UsageError
from ._mcp_server import build_server
from ._runtime import Runtime

TOKEN_ENV = "TOOLCAGE_MCP_TOKEN"  # noqa: S105 (the variable's name, not a token)
"""The environment variable holding the bearer token of the HTTP transport."""

_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


async def serve_stdio(runtime: Runtime, agent_id: str) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    server = build_server(runtime, agent_id)
    async with runtime, stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT`` (on 127.0.0.1); IPv6 hosts in brackets."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--http: expected HOST:PORT, got {text!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve_http(
    runtime: Runtime,
    agent_id: str,
    host: str,
    port: int,
    token: str | None,
    *,
    log: TextIO = sys.stderr,
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled."""
    if not token and not is_loopback(host):
        raise UsageError(
            f"serving on {host} needs a bearer token ([mcp.serve] token_env, or {TOKEN_ENV})"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"--http: cannot bind {host}:{port}: {exc.strerror}") from None
    sock.listen(128)  # clients that connect before uvicorn starts wait in the backlog
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    security = _header_checks(host, shown, bound_port)
    server = build_server(runtime, agent_id)
    app: _App = server.streamable_http_app(host=host, transport_security=security)
    if token:
        app = _require_token(app, token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)
    async with runtime:
        try:
            print(f"toolcage mcp: http://{shown}:{bound_port}/mcp", file=log, flush=True)
            await web.serve(sockets=[sock])
        finally:
            sock.close()


def _header_checks(host: str, shown: str, port: int) -> TransportSecuritySettings:
    """Host and Origin must name the bound address. On a wildcard address (``0.0.0.0``,
    ``::``) the names clients use are not known here; the bearer token, which a web page
    cannot read, guards that server instead."""
    if host in ("0.0.0.0", "::"):  # noqa: S104 - compared with, not bound to
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = [shown, "localhost", "127.0.0.1", "[::1]"] if is_loopback(host) else [shown]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:{port}" for n in names],
        allowed_origins=[f"http://{n}:{port}" for n in names],
    )


def _require_token(app: _App, token: str) -> _App:
    """``app`` behind ``Authorization: Bearer TOKEN`` (compared in constant time)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", ())).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"www-authenticate", b"Bearer"),
                            (b"content-type", b"text/plain"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"a bearer token is required"})
                return
        await app(scope, receive, send)

    return guarded
