"""The network tools' results for two audiences: ``details`` a caller decides on and a
``display`` line for a person, through ``Runtime.execute`` against servers on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, ToolResult

from .servers import Server, default_routes, serving

pytestmark = pytest.mark.anyio

FOUND = {
    "results": [
        {"title": "WebAssembly", "url": "https://webassembly.org/", "content": "A binary format"},
        {"title": "WASI", "url": "https://wasi.dev/", "content": "The system interface"},
    ]
}


@pytest.fixture(autouse=True)
def no_malformed_documents(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A built-in guest whose result document has a malformed member fails its test."""
    with caplog.at_level(logging.WARNING, logger="toolcage.wasm"):
        yield
    assert not [r.getMessage() for r in caplog.records if r.name == "toolcage.wasm"]


def _search_results(h: BaseHTTPRequestHandler) -> None:
    body = json.dumps(FOUND if "q=wasm" in h.path else {"results": []}).encode()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@pytest.fixture
def server() -> Iterator[Server]:
    with serving({**default_routes(), "/search": _search_results}) as running:
        yield running


async def call(tmp_path: Path, server: Server, tool: str, **args: Any) -> ToolResult:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    (tmp_path / "toolcage.toml").write_text(
        '[egress]\nprivate_exceptions = ["127.0.0.1"]\nmax_response_bytes = 1048576\n\n'
        f'[egress.web_search]\nprovider = "searxng"\nbase_url = "{server.url}/"\n'
    )
    async with Runtime.from_config(tmp_path / "toolcage.toml") as runtime:
        result = await runtime.execute(tool, args)
    assert not result.is_error, result.output_text
    return result


class TestHttpRequest:
    async def test_a_plain_answer(self, tmp_path: Path, server: Server) -> None:
        result = await call(tmp_path, server, "http_request", url=server.url + "/ok")
        assert result.details == {
            "status": 200,
            "method": "GET",
            "url": server.url + "/ok",
            "final_url": server.url + "/ok",
            "content_type": "text/plain",
            "bytes": 5,
            "truncated": False,
            "redirects": 0,
        }
        assert result.display == f"GET 127.0.0.1:{server.port}/ok → 200 (5 B)"
        assert result.artifacts == ()

    async def test_a_redirect_is_followed_to_its_final_url(
        self, tmp_path: Path, server: Server
    ) -> None:
        result = await call(tmp_path, server, "http_request", url=server.url + "/redirect")
        assert result.details is not None
        assert (result.details["final_url"], result.details["redirects"]) == (
            server.url + "/ok",
            1,
        )
        assert result.display == f"GET 127.0.0.1:{server.port}/redirect → 200 (5 B)"

    async def test_the_method_and_the_status(self, tmp_path: Path, server: Server) -> None:
        args = {"url": server.url + "/echo", "method": "POST", "body": "hi"}
        result = await call(tmp_path, server, "http_request", **args)
        assert result.details is not None
        assert (result.details["method"], result.details["status"]) == ("POST", 201)
        assert result.display == f"POST 127.0.0.1:{server.port}/echo → 201 (14 B)"

    async def test_a_cut_body_reports_its_original_size(
        self, tmp_path: Path, server: Server
    ) -> None:
        result = await call(tmp_path, server, "http_request", url=server.url + "/big")
        assert result.details is not None
        assert (result.details["bytes"], result.details["truncated"]) == (3 * 1024 * 1024, True)
        assert result.display == f"GET 127.0.0.1:{server.port}/big → 200 (3.0 MB)"


class TestWebSearch:
    async def test_the_query_and_the_urls_found(self, tmp_path: Path, server: Server) -> None:
        result = await call(tmp_path, server, "web_search", query="wasm")
        assert result.details == {
            "query": "wasm",
            "results": 2,
            "urls": ["https://webassembly.org/", "https://wasi.dev/"],
        }
        assert result.display == 'Searched "wasm" (2 results)'

    async def test_nothing_found(self, tmp_path: Path, server: Server) -> None:
        result = await call(tmp_path, server, "web_search", query="nothing")
        assert result.details == {"query": "nothing", "results": 0, "urls": []}
        assert result.display == 'Searched "nothing" (0 results)'
