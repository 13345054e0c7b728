"""The transports of ``toolcage mcp``: stdio, streamable HTTP behind a bearer token, and
streamable HTTP on a Unix socket that admits only the server's own user.

Whoever reaches the server can call every tool it serves and answer its approval prompts
(elicitation goes to the calling client), so a network transport lets in only the
operator's clients, whatever the address:

- ``--http`` needs a bearer token (``[mcp.serve]`` in the config, or
  ``TOOLCAGE_MCP_TOKEN``), compared in constant time on every request. Without one it is
  refused -- on loopback too, where every local account connects -- unless the operator
  passes ``--unsafe-no-token``, which serves loopback only and logs a warning.
- ``--socket PATH`` is the tokenless local choice: the kernel tells who connected, and
  only the server's own uid is let in (:mod:`._socket`). A token, when set, is required
  there too.

Over TCP, Host and Origin headers are checked against the bound address (DNS rebinding: a
web page must not reach a local server under a name it controls); a browser cannot reach a
Unix socket. The socket is bound before the server starts, so port 0 works; the URL is
printed to stderr once the socket listens (a client that connects before the server starts
waits in the backlog).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, TextIO

import anyio
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from ..._errors import UsageError
from ..._host import ToolHost
from ..._unix_socket import unix_listener
from ._server import build_server
from ._socket import PeerCheckedH11

TOKEN_ENV = "TOOLCAGE_MCP_TOKEN"  # noqa: S105 (the variable's name, not a token)
"""The environment variable holding the bearer token of the HTTP transport."""

_logger = logging.getLogger("toolcage.mcp")
_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


async def serve_stdio(runtime: ToolHost, agent_id: str) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    server = build_server(runtime, agent_id)
    async with contextlib.aclosing(runtime), stdio_server() as (read_stream, write_stream):
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
    runtime: ToolHost,
    agent_id: str,
    host: str,
    port: int,
    token: str | None,
    *,
    unsafe_no_token: bool = False,
    log: TextIO = sys.stderr,
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled."""
    _check_token(host, token, unsafe_no_token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"--http: cannot bind {host}:{port}: {exc.strerror}") from None
    with sock:
        sock.listen(128)  # clients that connect before uvicorn starts wait in the backlog
        bound_port = sock.getsockname()[1]
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        url = f"http://{shown}:{bound_port}/mcp"
        if not token:
            _logger.warning(
                "UNSAFE: --unsafe-no-token: %s lets in every local account without a token, "
                "and such a client answers its own approval prompts",
                url,
                extra={"event": "mcp.unsafe_no_token", "url": url},
            )
        security = _header_checks(host, shown, bound_port)
        await _serve(runtime, agent_id, sock, security, token, url, log=log)


async def serve_socket(
    runtime: ToolHost,
    agent_id: str,
    path: Path,
    token: str | None,
    *,
    log: TextIO = sys.stderr,
) -> None:
    """Serve streamable HTTP on the Unix socket ``path`` (at ``/mcp``) until cancelled;
    only the server's own uid may connect."""
    with unix_listener(path) as sock:
        # No browser reaches a Unix socket, so there is no rebinding to guard against, and
        # the Host a client sends names nothing.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        banner = f"http://localhost/mcp on the Unix socket {path}"
        await _serve(runtime, agent_id, sock, security, token, banner, log=log, http=PeerCheckedH11)


def _check_token(host: str, token: str | None, unsafe_no_token: bool) -> None:
    """Refuse to serve HTTP without a token, unless the operator said so for loopback."""
    if token and unsafe_no_token:
        raise UsageError(
            "--unsafe-no-token: a bearer token is set ([mcp.serve] or $TOOLCAGE_MCP_TOKEN); "
            "give one or the other"
        )
    if token:
        return
    if not is_loopback(host):
        only = "; --unsafe-no-token serves loopback only" if unsafe_no_token else ""
        raise UsageError(
            f"serving on {host} needs a bearer token ([mcp.serve] token_env, or {TOKEN_ENV})" + only
        )
    if not unsafe_no_token:
        raise UsageError(
            "--http needs a bearer token: without one every local account could call the "
            "tools and approve its own privileged calls. Set [mcp.serve] token_env (or "
            f"{TOKEN_ENV}), serve on a Unix socket only you can use with --socket PATH, or "
            "pass --unsafe-no-token to serve loopback without one"
        )


async def _serve(
    runtime: ToolHost,
    agent_id: str,
    sock: socket.socket,
    security: TransportSecuritySettings,
    token: str | None,
    banner: str,
    *,
    log: TextIO,
    http: type[asyncio.Protocol] | str = "h11",
) -> None:
    """Serve the MCP app on the listening ``sock`` until cancelled or signalled."""
    server = build_server(runtime, agent_id)
    app: _App = server.streamable_http_app(transport_security=security)
    if token:
        app = _require_token(app, token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", http=http)
    web = _Server(config)
    async with contextlib.aclosing(runtime), anyio.create_task_group() as group:
        if threading.current_thread() is threading.main_thread():
            group.start_soon(_stop_on_signal, web)
        print(f"toolcage mcp: {banner}", file=log, flush=True)
        await web.serve(sockets=[sock])
        group.cancel_scope.cancel()


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: they re-raise the signal once the
    server has stopped, which ends the process before the runtime is closed and the
    socket file removed. :func:`_stop_on_signal` stops it instead."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _stop_on_signal(web: uvicorn.Server) -> None:
    """SIGTERM or SIGINT: stop taking requests and end the open ones; a second: at once."""
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            web.force_exit = web.should_exit
            web.should_exit = True


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
