"""SSRF: every URL of the corpus, and every redirect to a private address, is refused.

A listener on 127.0.0.1 and one on ::1 record every connection they receive; the suite runs
the host's HTTP client under the *default* egress policy and asserts zero hits. Redirect
cases use a redirector that a test policy allows by its exact ``IP:port`` (and nothing
else private), and check that what it points at is still refused.

Names are looked up in a table (:class:`TableResolver`), never in DNS, so no case can reach
a real host; an audit hook sees every ``connect`` and ``getaddrinfo`` the process makes
while a test runs, refuses any connection that is not to loopback, and lets the suite
assert that a malformed host reaches no resolver at all.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from toolcage.host_bindings import EgressClient, HttpFailure
from toolcage.policies import EgressConfig, EgressPolicy, Secret, SecretConfig, SecretPolicy
from toolcage.policies._config import parse_config
from toolcage.policies._hosts import host_problem
from toolcage.runtime import Runtime
from toolcage.runtime.selftest import load_corpus

pytestmark = pytest.mark.adversarial

CORPUS = load_corpus("ssrf_corpus.json")
CASES: list[dict[str, str]] = CORPUS["cases"]
MALFORMED: list[str] = CORPUS["malformed_hosts"]
METADATA: list[str] = CORPUS["metadata"]
BAD_REDIRECTS: list[str] = CORPUS["bad_redirects"]
LOOPBACK = ("127.0.0.1", "::1")


@dataclass
class NetworkWatch:
    """What the process does on the network while a test of this suite runs."""

    active: bool = False
    connects: list[str] = field(default_factory=list)
    """Hosts of every TCP connect, refused unless loopback."""
    lookups: list[str] = field(default_factory=list)
    """Every host given to ``getaddrinfo``."""

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event == "socket.connect" and isinstance(args[1], tuple):
            host = str(args[1][0])
            self.connects.append(host)
            if host not in LOOPBACK:
                raise ConnectionRefusedError(f"the SSRF suite never connects to {host}")
        elif event == "socket.getaddrinfo":
            self.lookups.append(str(args[0]))


WATCH = NetworkWatch()
sys.addaudithook(WATCH.hook)


@pytest.fixture(autouse=True)
def watch() -> Iterator[NetworkWatch]:
    WATCH.connects.clear()
    WATCH.lookups.clear()
    WATCH.active = True
    try:
        yield WATCH
    finally:
        WATCH.active = False
    assert all(host in LOOPBACK for host in WATCH.connects), WATCH.connects


class TableResolver:
    """Answers names from a table, records every name it is asked, never leaves the process."""

    TABLE: ClassVar[dict[str, list[str]]] = {
        "localhost": ["127.0.0.1", "::1"],
        "ip6-localhost": ["::1"],
        "ip6-loopback": ["::1"],
        "loopback.test": ["127.0.0.1"],
        "mixed.test": ["93.184.215.14", "127.0.0.1"],
        "metadata-alias.test": ["169.254.169.254"],
        "wireserver-alias.test": ["168.63.129.16"],
    }

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        answer = self.TABLE.get(host.lower().rstrip("."))
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return answer


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


RESOLVER = TableResolver()
DEFAULT_CLIENT = EgressClient(EgressPolicy(EgressConfig()), resolver=RESOLVER)


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
        before, asked = _total_hits(recorders), len(RESOLVER.asked)
        url = case["url"].replace("{port}", str(recorders[0].port))
        with pytest.raises(HttpFailure) as info:
            DEFAULT_CLIENT.request("http_request", "GET", url, {}, b"", _deadline())
        assert _refusal(info.value), info.value.message
        assert _total_hits(recorders) == before
        assert all(host_problem(name) is None for name in RESOLVER.asked[asked:])


def _refusal(failure: HttpFailure) -> bool:
    """Refused by policy or as malformed; or a well-formed public name no table knows."""
    if failure.kind in ("permission_denied", "validation_error"):
        return True
    if failure.kind != "execution_error":
        return False
    return failure.message.startswith("cannot resolve") or "invalid redirect" in failure.message


class TestMalformedHosts:
    """Hosts that are neither DNS names nor canonical IP literals: policy, before any lookup."""

    def test_corpus_is_large_enough(self) -> None:
        assert len(MALFORMED) >= 50

    @pytest.mark.parametrize("url", MALFORMED)
    def test_refused_by_policy_before_any_lookup(
        self, url: str, recorders: list[Recorder], watch: NetworkWatch
    ) -> None:
        """The system's own resolver: no ``getaddrinfo`` may see the host at all."""
        before = _total_hits(recorders)
        client = EgressClient(EgressPolicy(EgressConfig(private_exceptions=("127.0.0.0/8",))))
        target = url.replace("{port}", str(recorders[0].port))
        with pytest.raises(HttpFailure) as info:
            client.request("http_request", "GET", target, {}, b"", _deadline())
        assert info.value.kind == "permission_denied", info.value.message
        assert "egress policy" in info.value.message
        assert watch.lookups == []
        assert _total_hits(recorders) == before


class TestCloudMetadata:
    """Every well-known metadata and platform service, by address or by name."""

    def test_corpus_is_large_enough(self) -> None:
        assert len(METADATA) >= 30

    @pytest.mark.parametrize("url", METADATA)
    def test_refused_without_a_lookup_or_connection(self, url: str, watch: NetworkWatch) -> None:
        asked = len(RESOLVER.asked)
        with pytest.raises(HttpFailure) as info:
            DEFAULT_CLIENT.request("http_request", "GET", url, {}, b"", _deadline())
        assert info.value.kind == "permission_denied", info.value.message
        assert "cloud metadata" in info.value.message
        assert RESOLVER.asked[asked:] == []
        assert watch.connects == []

    @pytest.mark.parametrize("name", ["metadata-alias.test", "wireserver-alias.test"])
    def test_a_name_resolving_to_one_is_refused_after_the_lookup(
        self, name: str, watch: NetworkWatch
    ) -> None:
        with pytest.raises(HttpFailure) as info:
            DEFAULT_CLIENT.request("http_request", "GET", f"http://{name}/", {}, b"", _deadline())
        assert info.value.kind == "permission_denied"
        assert "cloud metadata" in info.value.message
        assert watch.connects == []

    def test_a_broad_exception_leaves_metadata_closed(self, watch: NetworkWatch) -> None:
        config = EgressConfig(private_exceptions=("169.254.0.0/16", "100.64.0.0/10", "fd00::/8"))
        client = EgressClient(EgressPolicy(config), resolver=RESOLVER)
        for url in (
            "http://169.254.169.254/",
            "http://100.100.100.200/",
            "http://[fd00:ec2::254]/",
        ):
            with pytest.raises(HttpFailure) as info:
                client.request("http_request", "GET", url, {}, b"", _deadline())
            assert "cloud metadata" in info.value.message
        assert watch.connects == []


class TestNamesAndAnswers:
    def test_a_mixed_answer_is_refused_before_any_connection(self, watch: NetworkWatch) -> None:
        with pytest.raises(HttpFailure) as info:
            DEFAULT_CLIENT.request(
                "http_request", "GET", "http://mixed.test/", {}, b"", _deadline()
            )
        assert info.value.kind == "permission_denied"
        assert watch.connects == []

    def test_an_ip_literal_is_never_looked_up(self, watch: NetworkWatch) -> None:
        asked = len(RESOLVER.asked)
        with pytest.raises(HttpFailure):
            DEFAULT_CLIENT.request("http_request", "GET", "http://[::1]:9/", {}, b"", _deadline())
        assert RESOLVER.asked[asked:] == []
        assert watch.lookups == []


class TestThroughTheRuntime:
    """``http_request`` and ``web_fetch`` under a runtime built from the default config."""

    @pytest.mark.anyio
    @pytest.mark.parametrize("tool", ["http_request", "web_fetch"])
    @pytest.mark.parametrize(
        "url",
        [
            "http://168.63.129.16/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://[fd00:ec2::254]/latest/meta-data/",
            "http://127.0.0.1.:9/",
            "http://2130706433:9/",
            "http://0x7f.1:9/",
        ],
    )
    async def test_refused_as_permission_denied(
        self, tool: str, url: str, tmp_path: Path, watch: NetworkWatch
    ) -> None:
        config = parse_config({}, base_dir=tmp_path)
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute(tool, {"url": url})
        envelope = result.envelope()
        assert envelope["error_type"] == "permission_denied", envelope
        assert watch.lookups == []
        assert watch.connects == []


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
    yield Redirector(EgressClient(policy, resolver=RESOLVER), f"http://127.0.0.1:{port}/go")
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


class TestBadRedirects:
    """A ``Location`` that is not a URL ends the request with an error naming it."""

    def test_corpus_has_bad_redirects(self) -> None:
        assert len(BAD_REDIRECTS) >= 15

    @pytest.mark.parametrize("location", BAD_REDIRECTS)
    def test_a_typed_error_and_no_further_connection(
        self, location: str, recorders: list[Recorder], redirector: Redirector
    ) -> None:
        before = _total_hits(recorders)
        target = location.replace("{port}", str(recorders[0].port))
        with pytest.raises(HttpFailure) as info:
            _via(redirector, target)
        failure = info.value
        if failure.kind == "execution_error":
            assert "invalid redirect" in failure.message
            assert repr(target) in failure.message
        else:
            assert failure.kind == "permission_denied", failure.message
        assert _total_hits(recorders) == before

    @pytest.mark.parametrize("location", ["http:evil", "https:evil.example", "http://[::1"])
    def test_the_message_names_the_location(self, location: str, redirector: Redirector) -> None:
        with pytest.raises(HttpFailure) as info:
            _via(redirector, location)
        assert info.value.kind == "execution_error"
        assert f"the Location {location!r} is not a URL" in info.value.message


SECRET_REDIRECTS: list[str] = CORPUS["secret_redirects"]
BOUND_VALUE = "ssrf-suite-credential-0123456789"


class _HeaderRecorder(BaseHTTPRequestHandler):
    """Answers 200 to everything and records the request line and headers it got; under
    ``/go?to=URL`` it redirects to URL instead."""

    seen: ClassVar[list[str]]

    def do_GET(self) -> None:
        self.seen.append(f"{self.requestline}\n{self.headers}")
        target = parse_qs(urlsplit(self.path).query).get("to", [""])[0]
        if urlsplit(self.path).path == "/go" and target:
            self.send_response(302)
            self.send_header("Location", target)
        else:
            self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _header_recorder() -> Iterator[tuple[int, list[str]]]:
    """A recording server on 127.0.0.1: its port, and what it has seen."""
    seen: list[str] = []
    handler = type("Handler", (_HeaderRecorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()


Recorded = tuple[int, list[str]]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Recorded, Recorded]]:
    """A redirector (``/go?to=URL``) and a sink, both recording the headers they get."""
    with _header_recorder() as redirector, _header_recorder() as sink:
        yield redirector, sink


class TestSecretsAcrossRedirects:
    """A secret bound to the redirector's exact host and port: a hop to another port never
    carries it, however the ``Location`` spells the other host; the hop is made (the sink
    is allowed by the egress policy) or refused, never with the credential. (A Location
    that an HTTP client reads as the redirector itself gets it: that is where it is bound.)"""

    def test_corpus_has_secret_redirects(self) -> None:
        assert len(SECRET_REDIRECTS) >= 15

    @pytest.mark.parametrize("location", SECRET_REDIRECTS)
    def test_the_hop_does_not_carry_it(
        self, location: str, servers: tuple[Recorded, Recorded]
    ) -> None:
        (own, at_self), (sink, at_sink) = servers
        at_self.clear()
        at_sink.clear()
        config = SecretConfig(
            from_env="UNUSED",
            hosts=[f"127.0.0.1:{own}"],
            schemes=["http"],
            header="Authorization",
            format="Bearer {value}",
        )
        secrets = SecretPolicy([Secret("api", config, BOUND_VALUE)])
        policy = EgressPolicy(
            EgressConfig(private_exceptions=(f"127.0.0.1:{own}", f"127.0.0.1:{sink}"))
        )
        client = EgressClient(policy, resolver=RESOLVER, secrets=secrets)
        target = location.replace("{sink}", str(sink)).replace("{self}", str(own))
        url = f"http://127.0.0.1:{own}/go?" + urlencode({"to": target})
        assert BOUND_VALUE not in _outcome(client, url)
        assert BOUND_VALUE in at_self[0]  # control: the redirector itself got it
        assert not any(BOUND_VALUE in seen for seen in at_sink), at_sink


def _outcome(client: EgressClient, url: str) -> str:
    """What the request brought back: the response, or the failure's message."""
    try:
        return repr(client.request("http_request", "GET", url, {}, b"", _deadline()))
    except HttpFailure as failure:
        return failure.message
