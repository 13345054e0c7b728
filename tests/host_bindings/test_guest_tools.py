"""The four network and time guest tools, in wasmtime, against real servers on 127.0.0.1."""

from __future__ import annotations

import base64
import datetime
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import EgressConfig, ToolcageConfig, WebSearchConfig
from toolcage.runtime import Runtime, TextContent, ToolExecutionUpdate

from .servers import Server, serving


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serving() as running:
        yield running


def _egress(**egress: Any) -> EgressConfig:
    egress.setdefault("private_exceptions", ("127.0.0.1",))
    return EgressConfig(**egress)


def _bindings(**egress: Any) -> EgressConfig:
    return _egress(**egress)


class Runner:
    """Runs a tool through a real :class:`Runtime` (pipeline, WASM runner, bindings)."""

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = base_dir
        self.progress: list[tuple[str, float | None]] = []

    def _record(self, event: object) -> None:
        if isinstance(event, ToolExecutionUpdate):
            self.progress.append((event.update.message, event.update.fraction))

    def __call__(
        self, tool: str, bindings: EgressConfig | ToolcageConfig | None = None, **args: Any
    ) -> dict[str, Any]:
        if isinstance(bindings, ToolcageConfig):
            config = bindings.model_copy(update={"base_dir": self.base_dir})
        else:
            config = ToolcageConfig(egress=bindings or _egress(), base_dir=self.base_dir)
        return anyio.run(self._run, config, tool, args)

    async def _run(self, config: ToolcageConfig, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        async with Runtime.from_config(config) as runtime:
            runtime.hooks.on_event(self._record)
            result = await runtime.execute(tool, args)
        text = "".join(c.text for c in result.content if isinstance(c, TextContent))
        if result.is_error:
            assert result.error is not None
            return {"ok": False, "error_type": result.error.kind.value, "message": text}
        return {"ok": True, "text": text}


@pytest.fixture
def run(tmp_path: Path) -> Runner:
    (tmp_path / "workspace").mkdir()
    return Runner(tmp_path)


class TestGetCurrentTime:
    def test_iso8601_in_a_zone(self, run: Runner) -> None:
        result = run("get_current_time", timezone="Asia/Kolkata")
        assert result["ok"] is True
        stamp = result["text"].split(" ")[0]
        assert stamp.endswith("+05:30")
        parsed = datetime.datetime.fromisoformat(stamp)
        assert abs(parsed.timestamp() - datetime.datetime.now(datetime.UTC).timestamp()) < 60
        assert "(Asia/Kolkata)" in result["text"]

    def test_human_readable(self, run: Runner) -> None:
        result = run("get_current_time", timezone="UTC", format="human_readable")
        assert re.search(r"\d{2}:\d{2}:\d{2} UTC \(UTC\+00:00\)$", result["text"])

    def test_default_is_the_host_zone(self, run: Runner) -> None:
        assert run("get_current_time")["ok"] is True

    @pytest.mark.parametrize(
        "zone", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", "Europe/Nowhere"]
    )
    def test_unknown_zone_is_a_validation_error(self, run: Runner, zone: str) -> None:
        result = run("get_current_time", timezone=zone)
        assert result["ok"] is False
        assert result["error_type"] == "validation_error"

    def test_ungranted_clock_cannot_instantiate(self, run: Runner) -> None:
        result = run("get_current_time", bindings=_bindings(grants={"get_current_time": ()}))
        assert result["ok"] is False
        assert "toolcage_clock_v1" in result["message"]


class TestHttpRequest:
    def test_get(self, run: Runner, server: Server) -> None:
        result = run("http_request", url=server.url + "/ok")
        assert result["ok"] is True
        assert result["text"].startswith("HTTP 200\n")
        assert "x-test: 1\n" in result["text"]
        assert result["text"].endswith("\n\nhello")

    def test_post_with_headers_and_body(self, run: Runner, server: Server) -> None:
        result = run(
            "http_request",
            url=server.url + "/echo",
            method="POST",
            headers={"X-Custom": "hdr"},
            body='data "quoted" \u00e9',
        )
        assert result["text"].startswith("HTTP 201")
        assert result["text"].endswith('POST /echo hdr data "quoted" \u00e9')

    def test_redirect_is_reported(self, run: Runner, server: Server) -> None:
        result = run("http_request", url=server.url + "/redirect")
        assert "HTTP 200 after 1 redirect(s), final URL " in result["text"]

    def test_big_body_is_truncated_with_original_size(self, run: Runner, server: Server) -> None:
        result = run(
            "http_request", url=server.url + "/big", bindings=_bindings(max_response_bytes=4096)
        )
        assert "[output truncated — original size: 3,145,728 bytes]" in result["text"]
        assert "x" * 4096 in result["text"]
        assert "x" * 4097 not in result["text"]

    def test_slow_server_times_out(self, run: Runner, server: Server) -> None:
        result = run("http_request", url=server.url + "/slow", bindings=_bindings(read_timeout=0.3))
        assert result["error_type"] == "timeout"

    def test_bad_tls(self, run: Runner, tmp_path: Path) -> None:
        with serving(tls_dir=tmp_path) as tls_server:
            result = run("http_request", url=tls_server.url + "/ok")
        assert result["error_type"] == "execution_error"
        assert "TLS error" in result["message"]

    def test_binary_is_base64(self, run: Runner, server: Server) -> None:
        result = run("http_request", url=server.url + "/binary")
        body = result["text"].split("[binary body, base64-encoded]\n", 1)[1]
        assert base64.b64decode(body) == bytes(range(256))

    def test_default_policy_blocks_loopback(self, run: Runner, server: Server) -> None:
        before = len(server.hits)
        result = run("http_request", bindings=ToolcageConfig(), url=server.url + "/ok")
        assert result["error_type"] == "permission_denied"
        assert len(server.hits) == before

    def test_wrong_types_are_a_validation_error(self, run: Runner) -> None:
        assert run("http_request", url=5)["error_type"] == "validation_error"


class TestWebFetch:
    def test_nasty_html_to_markdown(self, run: Runner, server: Server) -> None:
        text = run("web_fetch", url=server.url + "/page.html")["text"]
        assert text.startswith("Title: T & T\n\n# Main <title>\n\n")
        assert "Hello **world** — café 😀" in text
        assert f"- one\n- two [link]({server.url}/next?a=1&b=2)" in text
        assert "```\nif (a < b) { return; }\n```" in text
        assert "| k | v |\n| --- | --- |\n| a | 1 |" in text
        for dropped in ("alert", "color", "hidden", "comment", "document.write", "noscript-text"):
            assert dropped not in text

    def test_relative_links_are_resolved(self, run: Runner, server: Server) -> None:
        text = run("web_fetch", url=server.url + "/dir/page.html")["text"]
        assert f"[rel]({server.url}/dir/rel/x.html)" in text
        assert "[cdn](http://cdn.example/y)" in text
        assert "[top](#top)" in text
        assert f"[link]({server.url}/next?a=1&b=2)" in text

    def test_pathological_html_degrades_without_crashing(self, run: Runner, server: Server) -> None:
        result = run("web_fetch", url=server.url + "/pathological.html")
        assert result["ok"] is True
        text = result["text"]
        assert text == "[the page was cut here: its elements nest more than 1024 deep]"

    def test_progress_becomes_update_events(self, run: Runner, server: Server) -> None:
        run("web_fetch", url=server.url + "/page.html")
        assert run.progress == [
            (f"fetching {server.url}/page.html", 0.0),
            ("converting HTML", 0.5),
        ]

    def test_plain_text(self, run: Runner, server: Server) -> None:
        text = run("web_fetch", url=server.url + "/page.html", format="text")["text"]
        assert "# " not in text
        assert "**" not in text
        assert "Main <title>" in text
        assert "* two link" in text

    def test_other_text_passes_through(self, run: Runner, server: Server) -> None:
        assert run("web_fetch", url=server.url + "/data.json")["text"] == '{"a": [1, 2]}'
        assert run("web_fetch", url=server.url + "/latin1")["text"] == "café €"
        assert run("web_fetch", url=server.url + "/bad-utf8")["text"] == "ok \ufffd\ufffd bytes"

    def test_binary_is_refused(self, run: Runner, server: Server) -> None:
        result = run("web_fetch", url=server.url + "/binary")
        assert result["error_type"] == "execution_error"
        assert "binary content (image/png)" in result["message"]

    def test_http_error_status(self, run: Runner, server: Server) -> None:
        result = run("web_fetch", url=server.url + "/missing")
        assert result["error_type"] == "execution_error"
        assert result["message"].startswith("HTTP 404")

    def test_redirect_then_convert(self, run: Runner, server: Server) -> None:
        assert run("web_fetch", url=server.url + "/redirect")["text"] == "hello"

    def test_big_page_is_cut_with_a_note(self, run: Runner, server: Server) -> None:
        result = run(
            "web_fetch", url=server.url + "/big", bindings=_bindings(max_response_bytes=1000)
        )
        # the guest's own note, escaped by the pipeline as a line of the tool's
        note = "\\[output truncated — original size: 3,145,728 bytes]"
        assert result["text"] == "x" * 1000 + "\n\n" + note

    def test_slow_page_times_out(self, run: Runner, server: Server) -> None:
        result = run("web_fetch", url=server.url + "/slow", bindings=_bindings(read_timeout=0.3))
        assert result["error_type"] == "timeout"

    def test_bad_tls(self, run: Runner, tmp_path: Path) -> None:
        with serving(tls_dir=tmp_path) as tls_server:
            result = run("web_fetch", url=tls_server.url + "/page.html")
        assert result["error_type"] == "execution_error"
        assert "CERTIFICATE_VERIFY_FAILED" in result["message"]

    def test_metadata_address_is_refused(self, run: Runner) -> None:
        result = run("web_fetch", url="http://169.254.169.254/latest/meta-data/")
        assert result["error_type"] == "permission_denied"


class TestWebSearch:
    def test_no_provider(self, run: Runner) -> None:
        result = run("web_search", query="anything")
        assert result["error_type"] == "execution_error"
        assert "no web search provider is configured" in result["message"]

    def test_searxng(self, run: Runner) -> None:
        from .test_search import SEARXNG, _json_route

        seen: list[dict[str, str]] = []
        with serving({"/search": _json_route(SEARXNG, seen)}) as provider:
            bindings = _bindings(
                web_search=WebSearchConfig(provider="searxng", base_url=provider.url)
            )
            result = run("web_search", bindings=bindings, query="wasm", count=5)
        assert result["text"] == (
            "1. WebAssembly\n   https://webassembly.org/\n   A binary format\n"
            "2. https://wasi.dev/\n   https://wasi.dev/\n   WASI\n"
        )
