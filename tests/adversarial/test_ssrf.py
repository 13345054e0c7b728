"""SSRF: every URL of the corpus, and every redirect to a private address, is refused.

A listener on 127.0.0.1 and one on ::1 record every connection they receive; the suite runs
the host's HTTP client under the *default* egress policy and asserts zero hits. Redirect
cases use a redirector that a test policy allows by its exact ``IP:port`` (and nothing
else private), and check that what it points at is still refused.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from toolcage.host_bindings import EgressClient, HttpFailure
from toolcage.policies import EgressConfig, EgressPolicy

pytestmark = pytest.mark.adversarial

CORPUS = json.loads((Path(__file__).parent / "ssrf_corpus.json").read_text(encoding="utf-8"))
CASES: list[dict[str, str]] = CORPUS["cases"]


class Recorder:
    """Accepts connections on a loopback address and remembers each one."""

    def __init__(self, family: socket.AddressFamily, host: str, port: int = 0) -> None:
        self.hits: list[Any] = []
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self.hits.append(peer)
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def recorders() -> Iterator[list[Recorder]]:
    v4 = Recorder(socket.AF_INET, "127.0.0.1")
    made = [v4]
    with contextlib.suppress(OSError):  # no IPv6 loopback on this machine
        made.append(Recorder(socket.AF_INET6, "::1", v4.port))
    yield made
    for rec in made:
        rec.close()


DEFAULT_CLIENT = EgressClient(EgressPolicy(EgressConfig()))


def _total_hits(recorders: list[Recorder]) -> int:
    return sum(len(r.hits) for r in recorders)


def _deadline() -> float:
    return time.monotonic() + 5


class TestCorpus:
    def test_corpus_is_large_enough(self) -> None:
        assert len(CASES) >= 120

    @pytest.mark.parametrize("case", CASES, ids=[f"{c['group']}:{c['url']!r}" for c in CASES])
    def test_refused_without_a_connection(
        self, case: dict[str, str], recorders: list[Recorder]
    ) -> None:
        before = _total_hits(recorders)
        url = case["url"].replace("{port}", str(recorders[0].port))
        with pytest.raises(HttpFailure) as info:
            DEFAULT_CLIENT.request("http_request", "GET", url, {}, b"", _deadline())
        assert _refusal(info.value), info.value.message
        assert _total_hits(recorders) == before


def _refusal(failure: HttpFailure) -> bool:
    """Refused by policy or as malformed; or parsed to a public name that (offline) no DNS knows."""
    if failure.kind in ("permission_denied", "validation_error"):
        return True
    if failure.kind != "execution_error":
        return False
    return failure.message.startswith("cannot resolve") or "invalid redirect" in failure.message


REDIRECT_TARGETS: list[str] = CORPUS["redirect_targets"]


class _Redirector(BaseHTTPRequestHandler):
    """Redirects every GET to ``/go?to=URL`` to URL."""

    def do_GET(self) -> None:
        target = parse_qs(urlsplit(self.path).query).get("to", [""])[0]
        self.send_response(302)
        self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass
class Redirector:
    client: EgressClient
    url: str


@pytest.fixture(scope="module")
def redirector() -> Iterator[Redirector]:
    """A client whose policy allows exactly the redirector's IP:port, nothing else private."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Redirector)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    policy = EgressPolicy(EgressConfig(private_exceptions=(f"127.0.0.1:{port}",)))
    yield Redirector(EgressClient(policy), f"http://127.0.0.1:{port}/go")
    server.shutdown()
    server.server_close()


def _via(redirector: Redirector, target: str) -> None:
    url = redirector.url + "?" + urlencode({"to": target})
    redirector.client.request("http_request", "GET", url, {}, b"", _deadline())


class TestRedirectsToPrivateAddresses:
    def test_corpus_has_redirects(self) -> None:
        assert len(REDIRECT_TARGETS) >= 15

    @pytest.mark.parametrize("target", REDIRECT_TARGETS)
    def test_redirect_hop_is_refused(
        self, target: str, recorders: list[Recorder], redirector: Redirector
    ) -> None:
        before = _total_hits(recorders)
        with pytest.raises(HttpFailure) as info:
            _via(redirector, target.replace("{port}", str(recorders[0].port)))
        assert _refusal(info.value), info.value.message
        assert _total_hits(recorders) == before

    def test_the_redirector_itself_is_reachable(self, redirector: Redirector) -> None:
        """Control: the exception lets the redirector through, so the hop really is checked."""
        with pytest.raises(HttpFailure) as info:
            _via(redirector, "http://127.0.0.2:9/")
        assert info.value.kind == "permission_denied"
        assert "127.0.0.2 is loopback" in info.value.message
