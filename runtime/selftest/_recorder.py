"""Recording HTTP servers on ``127.0.0.1``, and the exact openings that let tools reach them.

A redirect or a credential sent to a host says something only when the first hop is
allowed: the redirector must be reachable for its ``Location`` to be judged, the host a
secret is bound to must be reachable for the control that the secret does arrive. So
:func:`admit` adds the exact ``127.0.0.1:PORT`` of each recorder to the scratch config's
``private_exceptions`` (and to each per-tool override that sets its own), on top of the
operator's rules and loosening nothing else: every other port of loopback, and every
hop after the first, is still judged by the operator's own rules. Whether the operator's
schemes and allow lists let the first hop out at all is asked by a control request, not
assumed.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from toolcage.host_bindings import ChannelMessage
from toolcage.policies import ToolcageConfig

REDIRECT_CODES = (301, 302, 307, 308)


class _Handler(BaseHTTPRequestHandler):
    """Records every request whole; ``/go?to=URL&code=N`` answers redirect N to URL, any
    other path ``200 ok``."""

    seen: ClassVar[list[bytes]]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, 1 << 20)) if length > 0 else b""
        self.seen.append(f"{self.requestline}\n{self.headers}".encode("latin-1") + body)
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        target = query.get("to", [""])[0]
        if url.path == "/go" and target:
            self.send_response(int(query.get("code", ["302"])[0]))
            self.send_header("Location", target)
        else:
            self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(b"ok")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Recorder:
    """An HTTP server on ``127.0.0.1`` (a port of its own) that keeps what it is sent."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        handler = type("Handler", (_Handler,), {"seen": self.seen})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``, as a ``private_exceptions`` entry and a secret host."""
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class Mailbox:
    """The host's channel in a selftest: keeps every message (``send_media`` delivers there)."""

    def __init__(self) -> None:
        self.sent: list[ChannelMessage] = []

    async def send(self, message: ChannelMessage) -> None:
        self.sent.append(message)

    def carried(self, since: int, text: str) -> bool:
        """Whether a message after the first ``since`` attached a file holding ``text``."""
        data = text.encode()
        return any(data in a.data for m in self.sent[since:] for a in m.attachments)


class Bait:
    """The recorders of a run: a redirector, a host the secrets are bound to (in the scratch
    config only), a host they are not bound to, and the channel."""

    def __init__(self) -> None:
        self.mailbox = Mailbox()
        self.redirector = Recorder()
        self.bound = Recorder()
        self.unbound = Recorder()

    def all(self) -> tuple[Recorder, ...]:
        return self.redirector, self.bound, self.unbound

    def close(self) -> None:
        for recorder in self.all():
            recorder.close()


def admit(config: ToolcageConfig, addresses: tuple[str, ...]) -> ToolcageConfig:
    """``config`` with exactly ``addresses`` (``IP:PORT``) added to every list of
    ``private_exceptions`` that applies; nothing else changed."""
    egress = config.egress

    def opened(rules: Any) -> tuple[str, ...]:
        return (*rules.private_exceptions, *addresses)

    tools = {
        name: override.model_copy(update={"private_exceptions": opened(override)})
        if "private_exceptions" in override.model_fields_set
        else override
        for name, override in egress.tools.items()
    }
    update = {"private_exceptions": opened(egress), "tools": tools}
    return config.model_copy(update={"egress": egress.model_copy(update=update)})
