"""The ``search`` binding against SearXNG- and Brave-shaped servers on 127.0.0.1."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from toolcage.host_bindings import SearchBinding
from toolcage.policies import EgressConfig, EgressPolicy, WebSearchConfig

from .servers import serving

SEARXNG = {
    "query": "wasm",
    "results": [
        {"title": "WebAssembly", "url": "https://webassembly.org/", "content": "A binary format"},
        {"title": "no url"},
        {"url": "https://wasi.dev/", "content": "WASI"},
    ],
}
KEY = "test-subscription-key"
BRAVE = {
    "web": {
        "results": [
            {"title": "Brave one", "url": "https://a.example/", "description": "first"},
            {"title": "Brave two", "url": "https://b.example/", "description": "second"},
        ]
    }
}


def _json_route(payload: Any, seen: list[dict[str, str]]) -> Any:
    def route(h: BaseHTTPRequestHandler) -> None:
        seen.append({"path": h.path, "token": h.headers.get("X-Subscription-Token", "")})
        body = json.dumps(payload).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return route


def _binding(search: WebSearchConfig) -> SearchBinding:
    config = EgressConfig(private_exceptions=("127.0.0.1",), web_search=search)
    return SearchBinding.from_policy(EgressPolicy(config))


def _deadline() -> float:
    return time.monotonic() + 10


class TestSearch:
    def test_searxng_shape(self) -> None:
        seen: list[dict[str, str]] = []
        with serving({"/search": _json_route(SEARXNG, seen)}) as server:
            binding = _binding(WebSearchConfig(provider="searxng", base_url=server.url + "/"))
            result = binding.search("web_search", {"query": "wasm tools"}, _deadline())
        assert result["ok"] is True
        assert result["results"] == [
            {
                "title": "WebAssembly",
                "url": "https://webassembly.org/",
                "snippet": "A binary format",
            },
            {"title": "https://wasi.dev/", "url": "https://wasi.dev/", "snippet": "WASI"},
        ]
        assert seen[0]["path"] == "/search?q=wasm+tools&format=json"

    def test_brave_shape_sends_the_key_host_side(self) -> None:
        seen: list[dict[str, str]] = []
        with serving({"/res": _json_route(BRAVE, seen)}) as server:
            config = WebSearchConfig(provider="brave", base_url=server.url + "/res", api_key=KEY)
            result = _binding(config).search("web_search", {"query": "x", "count": 1}, _deadline())
        assert [r["title"] for r in result["results"]] == ["Brave one"]
        assert seen[0]["token"] == KEY
        assert "count=1" in seen[0]["path"]

    def test_no_provider_is_a_clear_error(self) -> None:
        result = _binding(WebSearchConfig()).search("web_search", {"query": "x"}, _deadline())
        assert result["ok"] is False
        assert result["error_type"] == "execution_error"
        assert "no web search provider is configured" in result["message"]

    def test_a_query_that_is_not_unicode_is_a_validation_error(self) -> None:
        with serving({"/search": _json_route(SEARXNG, [])}) as server:
            binding = _binding(WebSearchConfig(provider="searxng", base_url=server.url + "/"))
            result = binding.search("web_search", {"query": "a\udc80b"}, _deadline())
            assert server.hits == []
        assert result == {
            "ok": False,
            "error_type": "validation_error",
            "message": "the query is not valid Unicode text",
        }

    def test_provider_errors_are_reported(self) -> None:
        with serving() as server:  # no /search route: 404
            binding = _binding(WebSearchConfig(provider="searxng", base_url=server.url))
            result = binding.search("web_search", {"query": "x"}, _deadline())
        assert result["error_type"] == "execution_error"
        assert "HTTP 404" in result["message"]

    def test_provider_on_a_private_address_needs_an_exception(self) -> None:
        with serving() as server:
            config = EgressConfig(
                web_search=WebSearchConfig(provider="searxng", base_url=server.url)
            )
            binding = SearchBinding.from_policy(EgressPolicy(config))
            result = binding.search("web_search", {"query": "x"}, _deadline())
        assert result["error_type"] == "permission_denied"
