"""The ``http`` binding against real servers on 127.0.0.1 (allowed by the test policy)."""

from __future__ import annotations

import base64
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.host_bindings import HttpBinding
from toolcage.policies import EgressConfig, EgressPolicy

from .servers import Server, serving


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serving() as running:
        yield running


def _binding(**rules: Any) -> HttpBinding:
    config = EgressConfig(private_exceptions=("127.0.0.1",), **rules)
    return HttpBinding.from_policy(EgressPolicy(config))


def _fetch(url: str, *, timeout: float = 10, binding: HttpBinding | None = None, **req: Any) -> Any:
    return (binding or _binding()).perform(
        "http_request", {"url": url, **req}, time.monotonic() + timeout
    )


class TestRequests:
    def test_get_returns_status_headers_and_text(self, server: Server) -> None:
        result = _fetch(server.url + "/ok")
        assert result["ok"] is True
        assert result["status"] == 200
        assert result["headers"]["x-test"] == "1"
        assert result["body"] == "hello"
        assert result["body_encoding"] == "text"
        assert result["truncated"] is False
        assert result["size"] == 5

    def test_method_headers_and_body_reach_the_server(self, server: Server) -> None:
        result = _fetch(
            server.url + "/echo", method="put", headers={"X-Custom": "yes"}, body="payload"
        )
        assert result["status"] == 201
        assert result["body"] == "PUT /echo yes payload"

    @pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "PATCH"])
    def test_every_method(self, server: Server, method: str) -> None:
        result = _fetch(server.url + "/echo", method=method, body="b")
        assert result["body"] == f"{method} /echo  b"

    def test_head_has_no_body(self, server: Server) -> None:
        result = _fetch(server.url + "/ok", method="HEAD")
        assert result["status"] == 200
        assert result["body"] == ""

    def test_unknown_method_is_a_validation_error(self, server: Server) -> None:
        result = _fetch(server.url + "/ok", method="TRACE")
        assert result == {
            "ok": False,
            "error_type": "validation_error",
            "message": result["message"],
        }

    def test_request_body_over_the_cap_is_refused(self, server: Server) -> None:
        result = _fetch(
            server.url + "/echo",
            method="POST",
            body="x" * 100,
            binding=_binding(max_request_bytes=10),
        )
        assert result["error_type"] == "validation_error"

    @pytest.mark.parametrize("header", ["Host", "Content-Length", "transfer-encoding"])
    def test_framing_headers_are_the_hosts(self, server: Server, header: str) -> None:
        result = _fetch(server.url + "/ok", headers={header: "1"})
        assert result["error_type"] == "validation_error"
        assert header in result["message"]


class TestGuestInput:
    """Whatever a guest sends comes back as a result object, never as an exception."""

    @pytest.mark.parametrize(
        ("headers", "named"),
        [
            ({"bad name": "1"}, "'bad name'"),
            ({"": "1"}, "''"),
            ({"x:y": "1"}, "'x:y'"),
            ({"caf\u00e9": "1"}, "'caf\u00e9'"),
            ({"x": "a\r\nInjected: 1"}, "'x'"),
            ({"x": "a\nb"}, "'x'"),
            ({"x": "nul\x00"}, "'x'"),
            ({"x": "\u00e9\u20ac"}, "'x'"),
        ],
    )
    def test_headers_http_cannot_carry_are_a_validation_error(
        self, server: Server, headers: dict[str, str], named: str
    ) -> None:
        before = len(server.hits)
        result = _fetch(server.url + "/ok", headers=headers)
        assert result["error_type"] == "validation_error", result
        assert named in result["message"]
        assert len(server.hits) == before

    def test_a_body_that_is_not_unicode_is_a_validation_error(self, server: Server) -> None:
        result = _fetch(server.url + "/echo", method="POST", body="\ud800")
        assert result == {
            "ok": False,
            "error_type": "validation_error",
            "message": "the body is not valid Unicode text",
        }

    @pytest.mark.parametrize("port", ["0", "65536", "99999"])
    def test_a_port_outside_the_range_is_refused(self, port: str) -> None:
        result = _fetch(f"http://127.0.0.1:{port}/")
        assert result["error_type"] == "permission_denied"
        assert "outside 1-65535" in result["message"]


class TestRedirects:
    def test_followed(self, server: Server) -> None:
        result = _fetch(server.url + "/redirect")
        assert result["status"] == 200
        assert result["redirects"] == 1
        assert result["url"].endswith("/ok")

    @pytest.mark.parametrize("location", ["http:evil", "https:", "http://[::1", "http://xn--/"])
    def test_a_location_that_is_not_a_url_is_named(self, location: str) -> None:
        def bad(h: Any) -> None:
            h.send_response(302)
            h.send_header("Location", location)
            h.send_header("Content-Length", "0")
            h.end_headers()

        with serving({"/": bad}) as running:
            result = _fetch(running.url + "/")
            assert len(running.hits) == 1
        if location == "http://xn--/":  # a host no DNS name can be: the policy's to refuse
            assert result["error_type"] == "permission_denied", result
        else:
            assert result["error_type"] == "execution_error", result
            assert f"the Location {location!r} is not a URL" in result["message"]

    def test_loop_stops_at_the_limit(self, server: Server) -> None:
        result = _fetch(server.url + "/loop", binding=_binding(max_redirects=3))
        assert result["error_type"] == "execution_error"
        assert "more than 3 redirects" in result["message"]


class TestBodies:
    def test_big_body_is_cut_at_the_cap_with_original_size(self, server: Server) -> None:
        result = _fetch(server.url + "/big", binding=_binding(max_response_bytes=1000))
        assert result["truncated"] is True
        assert len(result["body"]) == 1000
        assert result["size"] == 3 * 1024 * 1024

    def test_declared_charset_is_decoded(self, server: Server) -> None:
        assert _fetch(server.url + "/latin1")["body"] == "café €"

    def test_invalid_utf8_text_is_replaced_not_fatal(self, server: Server) -> None:
        assert _fetch(server.url + "/bad-utf8")["body"] == "ok \ufffd\ufffd bytes"

    def test_binary_arrives_as_base64(self, server: Server) -> None:
        result = _fetch(server.url + "/binary")
        assert result["body_encoding"] == "base64"
        assert result["content_type"] == "image/png"
        assert base64.b64decode(result["body"]) == bytes(range(256))


class TestTimeouts:
    def test_read_timeout(self, server: Server) -> None:
        started = time.monotonic()
        result = _fetch(server.url + "/slow", binding=_binding(read_timeout=0.5))
        assert result["error_type"] == "timeout"
        assert time.monotonic() - started < 2.5

    def test_call_deadline_bounds_the_wait(self, server: Server) -> None:
        started = time.monotonic()
        result = _fetch(server.url + "/slow", timeout=0.5)
        assert result["error_type"] == "timeout"
        assert time.monotonic() - started < 2.5

    def test_passed_deadline_sends_nothing(self, server: Server) -> None:
        before = len(server.hits)
        result = _fetch(server.url + "/ok", timeout=-1)
        assert result["error_type"] == "timeout"
        assert len(server.hits) == before


class TestTls:
    def test_self_signed_certificate_is_a_clear_tls_error(self, tmp_path: Path) -> None:
        with serving(tls_dir=tmp_path) as tls_server:
            result = _fetch(tls_server.url + "/ok")
        assert result["error_type"] == "execution_error"
        assert "TLS error" in result["message"]
        assert "CERTIFICATE_VERIFY_FAILED" in result["message"]


class TestPolicy:
    def test_default_policy_refuses_loopback_before_connecting(self, server: Server) -> None:
        before = len(server.hits)
        binding = HttpBinding.from_policy(EgressPolicy(EgressConfig()))
        result = _fetch(server.url + "/ok", binding=binding)
        assert result["error_type"] == "permission_denied"
        assert "loopback" in result["message"]
        assert len(server.hits) == before

    def test_localhost_name_is_checked_after_resolution(self, server: Server) -> None:
        binding = HttpBinding.from_policy(EgressPolicy(EgressConfig()))
        result = _fetch(f"http://localhost:{server.port}/ok", binding=binding)
        assert result["error_type"] == "permission_denied"

    def test_every_resolved_address_must_pass(self, server: Server) -> None:
        """``localhost`` answers 127.0.0.1 and, with IPv6, ::1; only 127.0.0.1 is excepted."""
        answers = {info[4][0] for info in socket.getaddrinfo("localhost", server.port)}
        result = _fetch(f"http://localhost:{server.port}/ok")
        if answers == {"127.0.0.1"}:
            assert result["status"] == 200
        else:
            assert result["error_type"] == "permission_denied"

    def test_deny_list_wins_over_exception(self, server: Server) -> None:
        result = _fetch(server.url + "/ok", binding=_binding(deny_hosts=("127.0.0.1",)))
        assert result["error_type"] == "permission_denied"
        assert "deny list" in result["message"]

    def test_redirect_to_a_disallowed_scheme_is_refused(self) -> None:
        def to_file(h: Any) -> None:
            h.send_response(302)
            h.send_header("Location", "file:///etc/passwd")
            h.send_header("Content-Length", "0")
            h.end_headers()

        with serving({"/": to_file}) as running:
            result = _fetch(running.url + "/")
        assert result["error_type"] in ("permission_denied", "validation_error")
