"""Host-side credentials: ``[secrets.*]`` through ``Runtime.from_config`` and real servers.

Two servers on 127.0.0.1 stand for two hosts (a secret is bound to a host *and* port); each
records the headers and the path of every request it gets, so a test can tell where a
credential went. The value must reach only the hop bound to it, and never come back in a
result, an error message or a log line.
"""

from __future__ import annotations

import base64
import logging
import os
import ssl
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from toolcage.host_bindings import EgressClient
from toolcage.policies import ConfigError, EgressConfig, EgressPolicy, SecretPolicy
from toolcage.policies._config import load_config, parse_config
from toolcage.runtime import Runtime, TextContent

from .servers import Route, Server, _send

VALUE = "s3cr3t-TOKEN-0123456789"
OTHER_VALUE = "other-CREDENTIAL-9876543210"


@dataclass
class Recording:
    """A server and the requests it got: (method, path, headers)."""

    server: Server
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    def values_seen(self) -> str:
        return repr(self.seen)


@contextmanager
def recording(
    routes: dict[str, Any] | None = None, tls: ssl.SSLContext | None = None
) -> Iterator[Recording]:
    """A recording server with the standard routes plus ``routes`` (``route(h, rec)``)."""
    made: Recording

    def record(h: BaseHTTPRequestHandler) -> None:
        made.seen.append((h.command, h.path, {k.lower(): v for k, v in h.headers.items()}))

    def ok(h: BaseHTTPRequestHandler) -> None:
        record(h)
        _send(h, 200, b"fine", "text/plain")

    def echo(h: BaseHTTPRequestHandler) -> None:
        """Echoes every header it got, as sent, URL-encoded and base64-encoded, and its path."""
        record(h)
        lines = [f"{k}: {v}" for k, v in h.headers.items()]
        lines += [quote(v, safe="") for v in h.headers.values()]
        lines += [base64.b64encode(v.encode()).decode() for v in h.headers.values()]
        lines.append(h.path)
        auth = h.headers.get("Authorization", "") + h.headers.get("X-Api-Key", "")
        _send(h, 200, "\n".join(lines).encode(), "text/plain", X_Echo=auth or "none")

    def page(h: BaseHTTPRequestHandler) -> None:
        record(h)
        auth = h.headers.get("Authorization", "")
        body = f"<html><body><h1>Hi</h1><p>token: {auth}</p></body></html>"
        _send(h, 200, body.encode(), "text/html; charset=utf-8")

    handlers: dict[str, Route] = {"/ok": ok, "/echo": echo, "/page": page}
    handlers |= {path: ok for path in ("/api/x", "/apix", "/other", "/api/%2e%2e/other")}

    def wrap(route: Any) -> Any:
        def handler(h: BaseHTTPRequestHandler) -> None:
            record(h)
            route(h, made)

        return handler

    handlers.update({path: wrap(route) for path, route in (routes or {}).items()})
    server = Server(handlers, tls)
    try:
        made = Recording(server)
        yield made
    finally:
        server.close()


@pytest.fixture
def bound() -> Iterator[Recording]:
    """The host the secrets are bound to."""
    with recording() as server:
        yield server


@pytest.fixture
def elsewhere() -> Iterator[Recording]:
    """Another host, bound to no secret."""
    with recording() as server:
        yield server


@pytest.fixture(autouse=True)
def token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCAGE_TEST_TOKEN", VALUE)
    monkeypatch.setenv("TOOLCAGE_TEST_OTHER", OTHER_VALUE)


def _config(tmp_path: Path, **secrets: dict[str, Any]) -> Any:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    raw = {"egress": {"private_exceptions": ["127.0.0.1"]}, "secrets": secrets}
    return parse_config(raw, base_dir=tmp_path)


def _secret(host: str, **extra: Any) -> dict[str, Any]:
    return {"from_env": "TOOLCAGE_TEST_TOKEN", "hosts": [host], "schemes": ["http"], **extra}


def _auth(host: str, **extra: Any) -> dict[str, Any]:
    return _secret(host, header="Authorization", format="Bearer {value}", **extra)


async def _call(config: Any, tool: str, **args: Any) -> dict[str, Any]:
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute(tool, args)
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    envelope = result.envelope()
    assert VALUE not in repr(envelope), envelope
    assert VALUE not in text
    return {"error_type": envelope.get("error_type"), "text": text, "envelope": envelope}


def _got(recording: Recording, header: str) -> list[str | None]:
    return [headers.get(header) for _, _, headers in recording.seen]


@pytest.fixture(autouse=True)
def no_value_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.DEBUG)
    yield
    logged = "\n".join(
        f"{record.getMessage()} {record.exc_text or ''}" for record in caplog.get_records("call")
    )
    assert VALUE not in logged
    assert OTHER_VALUE not in logged


pytestmark = pytest.mark.anyio


class TestAddedByTheHost:
    async def test_only_the_bound_host_gets_it(
        self, tmp_path: Path, bound: Recording, elsewhere: Recording
    ) -> None:
        config = _config(tmp_path, api=_auth(bound.host))
        assert (await _call(config, "http_request", url=bound.url + "/ok"))["error_type"] is None
        assert (await _call(config, "http_request", url=elsewhere.url + "/ok"))[
            "error_type"
        ] is None
        assert _got(bound, "authorization") == [f"Bearer {VALUE}"]
        assert _got(elsewhere, "authorization") == [None]

    async def test_the_host_header_replaces_the_models(
        self, tmp_path: Path, bound: Recording
    ) -> None:
        config = _config(tmp_path, api=_auth(bound.host))
        await _call(
            config, "http_request", url=bound.url + "/ok", headers={"authorization": "Bearer x"}
        )
        assert _got(bound, "authorization") == [f"Bearer {VALUE}"]

    async def test_as_a_query_parameter(self, tmp_path: Path, bound: Recording) -> None:
        config = _config(tmp_path, api=_secret(bound.host, query="key"))
        result = await _call(config, "http_request", url=bound.url + "/echo?a=1")
        assert bound.seen[0][1] == f"/echo?a=1&key={VALUE}"
        assert "/echo?a=1&key=[redacted secret api]" in result["text"]

    async def test_web_fetch_gets_it_too(
        self, tmp_path: Path, bound: Recording, elsewhere: Recording
    ) -> None:
        config = _config(tmp_path, api=_auth(bound.host))
        result = await _call(config, "web_fetch", url=bound.url + "/page")
        assert result["error_type"] is None, result
        assert "token: Bearer [redacted secret api]" in result["text"]
        await _call(config, "web_fetch", url=elsewhere.url + "/page")
        assert _got(bound, "authorization") == [f"Bearer {VALUE}"]
        assert _got(elsewhere, "authorization") == [None]

    @pytest.mark.parametrize(
        ("limits", "path", "method", "sent"),
        [
            ({"paths": ["/api"]}, "/api/x", "GET", True),
            ({"paths": ["/api"]}, "/other", "GET", False),
            ({"paths": ["/api"]}, "/apix", "GET", False),
            ({"paths": ["/api"]}, "/api/../other", "GET", False),
            ({"paths": ["/api"]}, "/api/%2e%2e/other", "GET", False),
            ({"methods": ["GET"]}, "/ok", "GET", True),
            ({"methods": ["GET"]}, "/ok", "POST", False),
            ({"schemes": ["https"]}, "/ok", "GET", False),
        ],
    )
    async def test_paths_methods_and_schemes_limit_it(
        self,
        tmp_path: Path,
        bound: Recording,
        limits: dict[str, Any],
        path: str,
        method: str,
        sent: bool,
    ) -> None:
        config = _config(tmp_path, api={**_auth(bound.host), **limits})
        await _call(config, "http_request", url=bound.url + path, method=method)
        assert _got(bound, "authorization") == [f"Bearer {VALUE}" if sent else None]

    async def test_a_host_without_a_port_means_the_default_port(
        self, tmp_path: Path, bound: Recording
    ) -> None:
        config = _config(tmp_path, api=_auth("127.0.0.1"))
        await _call(config, "http_request", url=bound.url + "/ok")
        assert _got(bound, "authorization") == [None]


class TestPlaceholders:
    async def test_replaced_on_the_bound_host(self, tmp_path: Path, bound: Recording) -> None:
        config = _config(tmp_path, api=_secret(bound.host))
        result = await _call(
            config, "http_request", url=bound.url + "/ok", headers={"X-Api-Key": "{{secret:api}}"}
        )
        assert result["error_type"] is None
        assert _got(bound, "x-api-key") == [VALUE]

    async def test_within_a_longer_value(self, tmp_path: Path, bound: Recording) -> None:
        config = _config(tmp_path, api=_secret(bound.host))
        headers = {"Authorization": "token {{ secret:api }}"}
        await _call(config, "http_request", url=bound.url + "/ok", headers=headers)
        assert _got(bound, "authorization") == [f"token {VALUE}"]

    async def test_refused_for_another_host(
        self, tmp_path: Path, bound: Recording, elsewhere: Recording
    ) -> None:
        config = _config(tmp_path, api=_secret(bound.host))
        result = await _call(
            config,
            "http_request",
            url=elsewhere.url + "/ok",
            headers={"X-Api-Key": "{{secret:api}}"},
        )
        assert result["error_type"] == "permission_denied"
        assert "secret 'api' is not bound to GET http://127.0.0.1:" in result["text"]
        assert f"it is sent only to {bound.host}" in result["text"]
        assert elsewhere.seen == []

    async def test_refused_for_an_unbound_method(self, tmp_path: Path, bound: Recording) -> None:
        config = _config(tmp_path, api=_secret(bound.host, methods=["GET"]))
        result = await _call(
            config,
            "http_request",
            url=bound.url + "/ok",
            method="DELETE",
            headers={"X-Api-Key": "{{secret:api}}"},
        )
        assert result["error_type"] == "permission_denied"
        assert bound.seen == []

    async def test_an_unknown_name_lists_the_configured_ones(
        self, tmp_path: Path, bound: Recording
    ) -> None:
        config = _config(tmp_path, api=_secret(bound.host))
        result = await _call(
            config, "http_request", url=bound.url + "/ok", headers={"X": "{{secret:github}}"}
        )
        assert result["error_type"] == "validation_error"
        assert "no secret named 'github' is configured (configured: api)" in result["text"]
        assert bound.seen == []

    @pytest.mark.parametrize("where", ["url", "body"])
    async def test_outside_a_header_is_refused(
        self, tmp_path: Path, bound: Recording, where: str
    ) -> None:
        config = _config(tmp_path, api=_secret(bound.host))
        args: dict[str, Any] = {"url": bound.url + "/ok", "method": "POST"}
        if where == "url":
            args["url"] += "?key={{secret:api}}"
        else:
            args["body"] = "key={{secret:api}}"
        result = await _call(config, "http_request", **args)
        assert result["error_type"] == "validation_error"
        assert "header values only" in result["text"]
        assert bound.seen == []


def _redirect_to(target: str) -> Any:
    def route(h: BaseHTTPRequestHandler, recording: Recording) -> None:
        _send(h, 302, b"", "text/plain", Location=target)

    return route


class TestRedirects:
    async def test_a_redirect_to_another_host_drops_it(
        self, tmp_path: Path, elsewhere: Recording
    ) -> None:
        with recording({"/go": _redirect_to(elsewhere.url + "/ok")}) as start:
            config = _config(tmp_path, api=_auth(start.host), key=_placeholder(start.host))
            result = await _call(
                config,
                "http_request",
                url=start.url + "/go",
                headers={"X-Api-Key": "{{secret:key}}", "X-Plain": "kept"},
            )
            assert result["error_type"] is None, result
            assert _got(start, "authorization") == [f"Bearer {VALUE}"]
            assert _got(start, "x-api-key") == [OTHER_VALUE]
        assert _got(elsewhere, "authorization") == [None]
        assert _got(elsewhere, "x-api-key") == [None]
        assert _got(elsewhere, "x-plain") == ["kept"]

    async def test_a_redirect_to_an_unbound_path_drops_it(self, tmp_path: Path) -> None:
        with recording({"/api/go": _redirect_to("/other")}) as start:
            config = _config(tmp_path, api=_auth(start.host, paths=["/api/"]))
            await _call(config, "http_request", url=start.url + "/api/go")
            assert _got(start, "authorization") == [f"Bearer {VALUE}", None]

    async def test_a_redirect_to_the_bound_host_adds_it(
        self, tmp_path: Path, bound: Recording
    ) -> None:
        with recording({"/go": _redirect_to(bound.url + "/ok")}) as start:
            config = _config(tmp_path, api=_auth(bound.host))
            result = await _call(config, "http_request", url=start.url + "/go")
            assert result["error_type"] is None
            assert _got(start, "authorization") == [None]
        assert _got(bound, "authorization") == [f"Bearer {VALUE}"]

    async def test_a_location_echoing_a_query_credential_is_refused(
        self, tmp_path: Path, elsewhere: Recording
    ) -> None:
        def leak(h: BaseHTTPRequestHandler, recording: Recording) -> None:
            key = h.path.partition("key=")[2]
            _send(h, 302, b"", "text/plain", Location=f"{elsewhere.url}/ok?stolen={key}")

        with recording({"/go": leak}) as start:
            config = _config(tmp_path, api=_secret(start.host, query="key"))
            result = await _call(config, "http_request", url=start.url + "/go")
        assert result["error_type"] == "permission_denied", result
        assert "carries the value of secret 'api'" in result["text"]
        assert elsewhere.seen == []

    async def test_an_error_quoting_the_value_is_redacted(self, tmp_path: Path) -> None:
        def broken(h: BaseHTTPRequestHandler, recording: Recording) -> None:
            key = h.path.partition("key=")[2]
            _send(h, 302, b"", "text/plain", Location=f"http://[::1{key}")

        with recording({"/go": broken}) as start:
            config = _config(tmp_path, api=_secret(start.host, query="key"))
            result = await _call(config, "http_request", url=start.url + "/go")
        assert result["error_type"] == "execution_error", result
        assert "http://[::1[redacted secret api]" in result["text"]


def _tls_contexts(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for 127.0.0.1, and a client context trusting it."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    return server, ssl.create_default_context(cafile=str(cert))


class TestDowngrade:
    """Through the binding's client: a runtime verifies TLS against the system's roots."""

    def test_a_redirect_from_https_to_http_drops_it(self, tmp_path: Path, bound: Recording) -> None:
        server_tls, client_tls = _tls_contexts(tmp_path)
        with recording({"/down": _redirect_to(bound.url + "/ok")}, tls=server_tls) as start:
            entry = {**_auth(start.host), "hosts": [start.host, bound.host]}
            config = _config(tmp_path, api={**entry, "schemes": ["https", "http"]})
            secrets = SecretPolicy.load(config.secrets, tmp_path)
            client = EgressClient(
                EgressPolicy(EgressConfig(private_exceptions=("127.0.0.1",))),
                verify=client_tls,
                secrets=secrets,
            )
            deadline = time.monotonic() + 30
            response = client.request("http_request", "GET", start.url + "/down", {}, b"", deadline)
            assert response.redirects == 1
            client.request("http_request", "GET", bound.url + "/ok", {}, b"", deadline)
            assert _got(start, "authorization") == [f"Bearer {VALUE}"]
        assert _got(bound, "authorization") == [None, f"Bearer {VALUE}"]


def _placeholder(host: str) -> dict[str, Any]:
    return {"from_env": "TOOLCAGE_TEST_OTHER", "hosts": [host], "schemes": ["http"]}


class TestRedaction:
    async def test_an_echo_comes_back_redacted_in_every_form(
        self, tmp_path: Path, bound: Recording
    ) -> None:
        config = _config(tmp_path, api=_auth(bound.host))
        result = await _call(config, "http_request", url=bound.url + "/echo")
        text = result["text"]
        assert "x-echo: Bearer [redacted secret api]" in text
        assert "Authorization: Bearer [redacted secret api]" in text
        assert "Bearer%20[redacted secret api]" in text
        for offset in range(3):  # the base64 of the header, whatever the alignment
            assert base64.b64encode(f"Bearer {VALUE}".encode()).decode() not in text
            assert base64.b64encode(b"x" * offset + VALUE.encode()).decode()[4:-4] not in text
        assert text.count("[redacted secret api]") >= 4

    async def test_a_value_cut_by_the_size_cap_leaves_no_part(self, tmp_path: Path) -> None:
        def padded(h: BaseHTTPRequestHandler, recording: Recording) -> None:
            body = b"x" * 95 + h.headers["Authorization"].encode() + b"y" * 100
            _send(h, 200, body, "text/plain")

        with recording({"/padded": padded}) as start:
            config = _config(tmp_path, api=_secret(start.host, header="Authorization"))
            raw = config.model_dump(exclude={"base_dir"})
            raw["egress"]["max_response_bytes"] = 100
            config = parse_config(raw, base_dir=tmp_path)
            result = await _call(config, "http_request", url=start.url + "/padded")
        assert result["error_type"] is None, result
        assert VALUE[:5] not in result["text"]
        assert "x" * 95 + "[reda\n" in result["text"]

    async def test_the_output_store_keeps_only_the_redacted_text(self, tmp_path: Path) -> None:
        def big(h: BaseHTTPRequestHandler, recording: Recording) -> None:
            _send(h, 200, (h.headers["Authorization"] + "\n").encode() * 4000, "text/plain")

        with recording({"/big": big}) as start:
            config = _config(tmp_path, api=_auth(start.host))
            async with Runtime.from_config(config) as runtime:
                result = await runtime.execute("http_request", {"url": start.url + "/big"})
                envelope = result.envelope()
                assert "[redacted secret api]" in envelope["result"]
                stored = b"".join(e.data for e in runtime.output_store._entries.values())
        assert b"[redacted secret api]" in stored
        assert VALUE.encode() not in stored
        assert VALUE not in repr(envelope)


class TestDescriptions:
    async def test_the_models_see_names_and_hosts_never_values(self, tmp_path: Path) -> None:
        config = _config(
            tmp_path,
            api=_auth("api.example.com", description="Example API token"),
            key=_placeholder("*.example.org"),
        )
        async with Runtime.from_config(config) as runtime:
            http = runtime.registry.get("http_request").schema().description
            fetch = runtime.registry.get("web_fetch").schema().description
        assert "{{secret:NAME}}" in http
        assert "api (api.example.com; over http, added as the Authorization header)" in http
        assert ": Example API token" in http
        assert "key (*.example.org; over http)" in http
        assert "api (api.example.com" in fetch
        assert "key (" not in fetch  # web_fetch takes no headers: only host-added ones
        assert VALUE not in http + fetch
        assert OTHER_VALUE not in http + fetch
        assert http.splitlines()[0].startswith("Send one HTTP request")

    async def test_no_secrets_no_note(self, tmp_path: Path) -> None:
        async with Runtime.from_config(_config(tmp_path)) as runtime:
            http = runtime.registry.get("http_request").schema().description
        assert "secret" not in http.lower()


class TestLoading:
    def test_a_literal_value_is_refused_without_repeating_it(self, tmp_path: Path) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(f'[secrets.api]\nvalue = "{VALUE}"\nhosts = ["api.example.com"]\n')
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert "secrets: api.value: a secret's value never goes in the config text" in str(
            info.value
        )
        assert VALUE not in str(info.value)

    def test_a_secret_written_as_a_string_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(f'[secrets]\napi = "{VALUE}"\n')
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert "its value never goes in the config text" in str(info.value)
        assert VALUE not in str(info.value)

    def test_an_unset_variable_is_named_when_the_runtime_is_built(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("TOOLCAGE_TEST_TOKEN")
        with pytest.raises(ConfigError, match=r"secrets\.api\.from_env: the environment variable "):
            Runtime.from_config(_config(tmp_path, api=_auth("api.example.com")))

    async def test_a_file_loses_its_trailing_newline(
        self, tmp_path: Path, bound: Recording
    ) -> None:
        secret = tmp_path / "token"
        secret.write_text(VALUE + "\n")
        secret.chmod(0o600)
        entry = {**_auth(bound.host), "from_file": "token"}
        del entry["from_env"]
        await _call(_config(tmp_path, api=entry), "http_request", url=bound.url + "/ok")
        assert _got(bound, "authorization") == [f"Bearer {VALUE}"]

    @pytest.mark.parametrize(
        ("mode", "content", "problem"),
        [
            (0o620, VALUE, "writable by group or others"),
            (0o602, VALUE, "writable by group or others"),
            (0o600, "abc", "shorter than 8 characters"),
            (0o600, "two words ", "starts or ends with a space"),
            (0o600, "tab\tinside-value", "not printable ASCII"),
            (None, VALUE, "cannot open"),
        ],
    )
    def test_a_file_that_cannot_be_used_is_named(
        self, tmp_path: Path, mode: int | None, content: str, problem: str
    ) -> None:
        secret = tmp_path / "token"
        if mode is not None:
            secret.write_text(content)
            os.chmod(secret, mode)
        entry = {"from_file": "token", "hosts": ["api.example.com"]}
        with pytest.raises(ConfigError) as info:
            Runtime.from_config(_config(tmp_path, api=entry))
        assert "secrets.api.from_file: " in str(info.value)
        assert problem in str(info.value)
        assert content not in str(info.value) or mode is None
