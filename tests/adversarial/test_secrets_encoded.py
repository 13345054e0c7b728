"""A secret never reaches a host it is not bound to, whatever encoding it travels in.

Real HTTP servers on 127.0.0.1 stand for two hosts: ``bound`` (the secret's host) and
``elsewhere`` (bound to nothing), each recording every request it gets. The bound host
plays the servers that leak: it echoes the credential it received into a redirect's
``Location`` -- percent-encoded as each URL part encodes it, form-encoded, JSON-escaped,
base64-encoded at each alignment -- or into its response; the test then asserts that
``elsewhere`` heard nothing and that no result holds the value. The value is shaped like a
base64 API key (``+``, ``/``, ``=``), the characters encoders disagree about.

Also here: the model cannot choose compression while secrets are configured (a server
that compresses anyway is decoded before redaction, or refused), a decompression bomb
costs the response cap and no more, and a ``from_file`` secret that a tool could read (in
a mount, through a link, in the shell's workspace) is a config error.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import re
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, quote, quote_plus, urlsplit

import pytest
from toolcage.policies import ConfigError
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, TextContent

from ..host_bindings.servers import Server, _send

pytestmark = [pytest.mark.adversarial, pytest.mark.anyio]

VALUE = "c2VjcmV0+a2V5/dmFsdWU=Zz"
ENV = "TOOLCAGE_TEST_ENCODED_SECRET"
SUB_DELIMS = "!$&'()*+,;="


def _b64(prefix: bytes, urlsafe: bool) -> Callable[[str], str]:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return lambda v: encode(prefix + v.encode()).decode()


def _lower_hex(text: str) -> str:
    return re.sub("%[0-9A-F]{2}", lambda m: m[0].lower(), text)


# Each way a server may write the value it received (into a URL, a response).
ENCODINGS: dict[str, Callable[[str], str]] = {
    "percent, every reserved character": lambda v: quote(v, safe=""),
    "percent, lower-case hex": lambda v: _lower_hex(quote(v, safe="")),
    "percent, as a path segment": lambda v: quote(v, safe=SUB_DELIMS + ":@"),
    "percent, as a user name": lambda v: quote(v, safe=SUB_DELIMS),
    "percent, encodeURIComponent": lambda v: quote(v, safe="!*'()"),
    "form encoding": lambda v: quote_plus(v, safe=""),
    "percent, twice": lambda v: quote(quote(v, safe=""), safe=""),
    "JSON-escaped": lambda v: json.dumps(v)[1:-1].replace("/", "\\/"),
    **{
        f"base64{' url-safe' if urlsafe else ''}, alignment {len(prefix)}": _b64(prefix, urlsafe)
        for prefix in (b"", b"u", b"us")
        for urlsafe in (False, True)
    },
}

# Where in a redirect's URL the encoded value goes.
PARTS: dict[str, Callable[[str, str], str]] = {
    "query": lambda base, enc: f"{base}/ok?stolen={enc}",
    "path": lambda base, enc: f"{base}/ok/{enc}",
    "fragment": lambda base, enc: f"{base}/ok#{enc}",
    "userinfo": lambda base, enc: base.replace("http://", f"http://user:{enc}@") + "/ok",
}
PERCENT = [name for name in ENCODINGS if name.startswith("percent")]
REDIRECT_CASES = [("query", name) for name in ENCODINGS] + [
    (part, name) for part in ("path", "fragment", "userinfo") for name in PERCENT
]


@dataclass
class Recorder:
    """A server and the requests it got: (method, path, headers, body)."""

    server: Server
    seen: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.port}"


Handler = Callable[[BaseHTTPRequestHandler, Recorder], None]


@contextmanager
def recorder(routes: dict[str, Handler] | None = None) -> Iterator[Recorder]:
    """A server that records every request; ``/ok`` answers 200, ``routes`` the rest."""
    made: Recorder

    def wrap(route: Handler) -> Callable[[BaseHTTPRequestHandler], None]:
        def handle(h: BaseHTTPRequestHandler) -> None:
            length = int(h.headers.get("Content-Length") or 0)
            body = h.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in h.headers.items()}
            made.seen.append((h.command, h.path, headers, body))
            route(h, made)

        return handle

    def ok(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
        _send(h, 200, b"fine", "text/plain")

    table = {"/ok": ok, **(routes or {})}
    server = Server({path: wrap(route) for path, route in table.items()})
    made = Recorder(server)
    try:
        yield made
    finally:
        server.close()


@pytest.fixture
def elsewhere() -> Iterator[Recorder]:
    """A host bound to no secret."""
    with recorder() as server:
        yield server


@pytest.fixture(autouse=True)
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, VALUE)


@pytest.fixture(autouse=True)
def no_value_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    for record in caplog.get_records("call"):
        assert VALUE not in f"{record.getMessage()} {record.exc_text or ''}"


def _config(tmp_path: Path, host: str, **how: Any) -> Any:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    secret = {"from_env": ENV, "hosts": [host], "schemes": ["http"], **how}
    raw = {"egress": {"private_exceptions": ["127.0.0.1"]}, "secrets": {"api": secret}}
    return parse_config(raw, base_dir=tmp_path)


async def _call(config: Any, **args: Any) -> dict[str, Any]:
    """``http_request`` through the runtime; no part of the outcome may hold the value."""
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute("http_request", args)
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    envelope = result.envelope()
    assert VALUE not in text
    assert VALUE not in json.dumps(envelope)
    return {"error_type": envelope.get("error_type"), "text": text}


def _received(h: BaseHTTPRequestHandler) -> str:
    """The credential this request carried, decoded: the ``key`` query parameter, or the
    ``Authorization`` header."""
    query = parse_qs(urlsplit(h.path).query)
    return query["key"][0] if "key" in query else h.headers.get("Authorization", "")


def _leak_into_location(part: str, encoding: str, target: Recorder) -> Handler:
    def leak(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
        location = PARTS[part](target.url, ENCODINGS[encoding](_received(h)))
        _send(h, 302, b"", "text/plain", Location=location)

    return leak


class TestRedirectsCarryNoValueAway:
    async def test_a_raw_query_echoed_into_a_cross_host_redirect(
        self, tmp_path: Path, elsewhere: Recorder
    ) -> None:
        """The query secret travels form-encoded (``%2B%2F%3D``); the server redirects
        with its raw query string, as many do."""

        def bounce(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
            query = urlsplit(h.path).query
            _send(h, 302, b"", "text/plain", Location=f"{elsewhere.url}/ok?{query}")

        with recorder({"/go": bounce}) as bound:
            config = _config(tmp_path, bound.host, query="key")
            result = await _call(config, url=bound.url + "/go")
            assert bound.seen[0][1] == f"/go?key={quote_plus(VALUE, safe='')}"
        assert result["error_type"] == "permission_denied", result
        assert "carries the value of secret 'api'" in result["text"]
        assert elsewhere.seen == []

    @pytest.mark.parametrize("how", ["query", "header"])
    @pytest.mark.parametrize(("part", "encoding"), REDIRECT_CASES)
    async def test_an_encoded_echo_in_a_location(
        self, tmp_path: Path, elsewhere: Recorder, how: str, part: str, encoding: str
    ) -> None:
        route = _leak_into_location(part, encoding, elsewhere)
        with recorder({"/go": route}) as bound:
            where = {"query": "key"} if how == "query" else {"header": "Authorization"}
            result = await _call(_config(tmp_path, bound.host, **where), url=bound.url + "/go")
            assert len(bound.seen) == 1
        assert result["error_type"] == "permission_denied", result
        assert elsewhere.seen == []

    async def test_every_hop_is_checked(self, tmp_path: Path, elsewhere: Recorder) -> None:
        """Two hops on the bound host (each carrying the secret), then the leak."""

        def first(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
            _send(h, 302, b"", "text/plain", Location="/second")

        leak = _leak_into_location("query", "base64 url-safe, alignment 2", elsewhere)
        with recorder({"/first": first, "/second": leak}) as bound:
            config = _config(tmp_path, bound.host, header="Authorization")
            result = await _call(config, url=bound.url + "/first")
            assert [h.get("authorization") for *_, h, _ in bound.seen] == [VALUE, VALUE]
        assert result["error_type"] == "permission_denied", result
        assert elsewhere.seen == []


def _hex_echo(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
    """Echoes the credential hex-encoded: a form redaction does not know."""
    _send(h, 200, b"hex: " + _received(h).encode().hex().encode(), "text/plain")


def _learned(result: dict[str, Any]) -> bytes:
    """What the model reads out of the hex echo."""
    found = re.search(r"hex: ([0-9a-f]+)", result["text"])
    assert found is not None, result
    return bytes.fromhex(found[1])


class TestRequestsCarryNoValueAway:
    """A value the model learned in a form redaction missed (hex) still cannot leave
    encoded otherwise, in a body or a header."""

    BODIES: ClassVar[dict[str, Callable[[str], str]]] = {
        "base64": lambda v: base64.b64encode(v.encode()).decode(),
        "base64 after a prefix": lambda v: base64.b64encode(b"x:" + v.encode()).decode(),
        "percent": lambda v: "data=" + quote(v, safe=""),
        "form encoding": lambda v: "data=" + quote_plus(v),
        "JSON-escaped": lambda v: json.dumps({"data": v}).replace("/", "\\/"),
        "JSON \\u escapes": lambda v: '{"data": "' + v.replace("+", "\\u002b") + '"}',
    }

    @pytest.mark.parametrize("encoding", BODIES)
    async def test_in_a_body(self, tmp_path: Path, elsewhere: Recorder, encoding: str) -> None:
        with recorder({"/hex": _hex_echo}) as bound:
            config = _config(tmp_path, bound.host, header="Authorization")
            learned = _learned(await _call(config, url=bound.url + "/hex"))
            body = self.BODIES[encoding](learned.decode())
            result = await _call(config, url=elsewhere.url + "/ok", method="POST", body=body)
        assert result["error_type"] == "permission_denied", result
        assert elsewhere.seen == []

    async def test_in_a_header(self, tmp_path: Path, elsewhere: Recorder) -> None:
        with recorder({"/hex": _hex_echo}) as bound:
            config = _config(tmp_path, bound.host, header="Authorization")
            learned = _learned(await _call(config, url=bound.url + "/hex"))
            headers = {"X-Data": quote(learned.decode(), safe=SUB_DELIMS)}
            result = await _call(config, url=elsewhere.url + "/ok", headers=headers)
        assert result["error_type"] == "permission_denied", result
        assert elsewhere.seen == []


class TestEchoesComeBackRedacted:
    async def test_every_form_in_a_response(self, tmp_path: Path) -> None:
        def forms(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
            got = _received(h)
            lines = [f"{name}: {encode(got)}" for name, encode in ENCODINGS.items()]
            _send(h, 200, "\n".join(lines).encode(), "text/plain")

        with recorder({"/forms": forms}) as bound:
            config = _config(tmp_path, bound.host, header="Authorization")
            result = await _call(config, url=bound.url + "/forms")
        assert result["error_type"] is None, result
        for name, encode in ENCODINGS.items():
            line = next(x for x in result["text"].splitlines() if x.startswith(name + ":"))
            assert encode(VALUE) not in line, name
            assert "[redacted secret api]" in line, name


def _compressed(coding: str, data: bytes) -> bytes:
    if coding == "gzip":
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    # br: one uncompressed meta-block (RFC 7932 section 9.2), then the empty last one
    header = ((len(data) - 1) << 4 | 1 << 20).to_bytes(3, "little")
    return header + data + b"\x03"


class TestCompression:
    @pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
    async def test_the_model_cannot_ask_for_compression(self, tmp_path: Path, coding: str) -> None:
        """The server compresses with what the model asked for, whatever the client says."""

        def echo(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
            body = _compressed(coding, f"you sent: {_received(h)}".encode())
            _send(h, 200, body, "text/plain", Content_Encoding=coding)

        with recorder({"/echo": echo}) as bound:
            config = _config(tmp_path, bound.host, header="Authorization")
            headers = {"Accept-Encoding": coding}
            result = await _call(config, url=bound.url + "/echo", headers=headers)
            assert [h["accept-encoding"] for *_, h, _ in bound.seen] == ["identity"]
        if coding == "br":  # nothing the host can decode, so nothing it can redact
            assert result["error_type"] == "execution_error", result
            assert "encoded as 'br'" in result["text"]
        else:
            assert result["error_type"] is None, result
            assert "you sent: [redacted secret api]" in result["text"]

    async def test_a_decompression_bomb_costs_the_cap(self, tmp_path: Path) -> None:
        """Without secrets the model's Accept-Encoding stands; 256 MiB of zeros, gzipped,
        must not be decoded past the response cap."""
        packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        zeros = bytes(1 << 20)
        bomb = b"".join(packer.compress(zeros) for _ in range(256)) + packer.flush()

        def serve(h: BaseHTTPRequestHandler, rec: Recorder) -> None:
            _send(h, 200, bomb, "application/octet-stream", Content_Encoding="gzip")

        with recorder({"/bomb": serve}) as server:
            (tmp_path / "workspace").mkdir()
            raw = {"egress": {"private_exceptions": ["127.0.0.1"], "max_response_bytes": 65536}}
            config = parse_config(raw, base_dir=tmp_path)
            async with Runtime.from_config(config) as runtime:
                args = {"url": server.url + "/bomb", "headers": {"Accept-Encoding": "gzip"}}
                await runtime.execute("http_request", args)  # the guest compiled, warm
                tracemalloc.start()
                try:
                    result = await runtime.execute("http_request", args)
                    _, peak = tracemalloc.get_traced_memory()
                finally:
                    tracemalloc.stop()
        assert not result.is_error, result.envelope()
        assert result.details["truncated"] is True
        assert peak < 32 << 20, f"peak {peak:,} bytes while reading a 64 KiB-capped body"


def _secret_file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(VALUE + "\n")
    path.chmod(0o600)
    return path


class TestFromFileOutOfReach:
    """A secret file a tool could read is refused when the runtime is built, by key."""

    def _refused(self, tmp_path: Path, entry: str, more: dict[str, Any] | None = None) -> str:
        (tmp_path / "workspace").mkdir(exist_ok=True)
        secret = {"from_file": entry, "hosts": ["api.example.com"]}
        raw = {"secrets": {"api": secret}, **(more or {})}
        with pytest.raises(ConfigError) as info:
            Runtime.from_config(parse_config(raw, base_dir=tmp_path))
        message = str(info.value)
        assert "secrets.api.from_file: " in message
        assert VALUE not in message
        return message

    def test_inside_a_mount(self, tmp_path: Path) -> None:
        _secret_file(tmp_path / "workspace" / "keys" / "api")
        message = self._refused(tmp_path, "workspace/keys/api")
        assert "(the default mount /workspace)" in message

    def test_a_link_to_a_file_inside_a_mount(self, tmp_path: Path) -> None:
        _secret_file(tmp_path / "workspace" / "api")
        (tmp_path / "api-link").symlink_to(tmp_path / "workspace" / "api")
        self._refused(tmp_path, "api-link")

    def test_a_mount_reaching_it_through_a_link(self, tmp_path: Path) -> None:
        _secret_file(tmp_path / "run" / "secrets" / "api")
        (tmp_path / "shared").symlink_to(tmp_path / "run")
        mounts = {"areas": [{"host": "shared", "guest": "/data", "tiers": {"read_only": "ro"}}]}
        message = self._refused(tmp_path, "run/secrets/api", {"mounts": mounts})
        assert "(mounts.areas.0.host)" in message

    def test_inside_the_shell_workspace(self, tmp_path: Path) -> None:
        _secret_file(tmp_path / "sandbox" / "api")
        message = self._refused(tmp_path, "sandbox/api", {"shell": {"workspace": "sandbox"}})
        assert "(shell.workspace)" in message

    async def test_outside_every_mount_it_is_accepted(self, tmp_path: Path) -> None:
        _secret_file(tmp_path / "secrets" / "api")
        (tmp_path / "workspace").mkdir()
        secret = {"from_file": "secrets/api", "hosts": ["api.example.com"]}
        config = parse_config({"secrets": {"api": secret}}, base_dir=tmp_path)
        async with Runtime.from_config(config) as runtime:
            assert (
                "api (api.example.com" in runtime.registry.get("http_request").schema().description
            )
