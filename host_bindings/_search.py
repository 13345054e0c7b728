"""The ``search`` binding: web search through the operator's configured provider.

The provider's endpoint and key stay on the host -- the guest only sends the query and
gets normalised results back, so an API key never enters guest memory. Requests go
through the same egress-checked client as ``http``, under the calling tool's rules.

Request ``{"query": "...", "count": 5}``. Result::

    {"ok": true, "provider": "searxng", "results": [{"title", "url", "snippet"}, ...]}

With no provider configured the result is an ``execution_error`` saying how to add one.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import wasmtime
from toolcage.policies import EgressPolicy, WebSearchConfig

from ._abi import (
    AbiError,
    GuestError,
    failed,
    module_name,
    ok,
)
from ._http import meter_for
from ._http_client import EgressClient
from ._http_response import HttpFailure
from ._rate_limits import ByteMeter, RateLimiter
from ._results import define_json_call

NOT_CONFIGURED = (
    "no web search provider is configured; set [egress.web_search] provider = "
    '"searxng" with base_url, or provider = "brave" with api_key'
)


class SearchBinding:
    """Capability ``search``: ``toolcage_search_v1.query`` / ``.result``."""

    name = "search"

    def __init__(
        self,
        client: EgressClient,
        config: WebSearchConfig,
        rate_limits: RateLimiter | None = None,
    ) -> None:
        self._client = client
        self._config = config
        self._rate_limits = rate_limits

    @classmethod
    def from_policy(
        cls, policy: EgressPolicy, rate_limits: RateLimiter | None = None
    ) -> SearchBinding:
        return cls(EgressClient(policy), policy.web_search, rate_limits)

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_call(
            linker,
            module_name(self.name),
            "query",
            lambda state, req: self.search(
                state.tool_name, req, state.deadline, meter_for(self._rate_limits, state)
            ),
        )

    def search(
        self, tool: str, req: dict[str, Any], deadline: float, meter: ByteMeter | None = None
    ) -> dict[str, Any]:
        """Run one query against the configured provider (its response bytes counted by
        ``meter``)."""
        text, count = req.get("query"), req.get("count", self._config.max_results)
        if not isinstance(text, str) or not isinstance(count, int) or isinstance(count, bool):
            raise GuestError(AbiError.INVALID)
        if not text.strip():
            return failed("validation_error", "the query is empty")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return failed("validation_error", "the query is not valid Unicode text")
        endpoint = self._config.endpoint()
        if endpoint is None:
            return failed("execution_error", NOT_CONFIGURED)
        count = max(1, min(count, self._config.max_results))
        headers = {"accept": "application/json"}
        if self._config.provider == "brave":
            url = f"{endpoint}?{urlencode({'q': text, 'count': count})}"
            headers["x-subscription-token"] = self._config.api_key or ""
        else:
            url = f"{endpoint}?{urlencode({'q': text, 'format': 'json'})}"
        try:
            response = self._client.request(tool, "GET", url, headers, b"", deadline, meter)
        except HttpFailure as exc:
            return failed(exc.kind, f"search provider: {exc.message}")
        if response.status != 200:
            return failed("execution_error", f"search provider answered HTTP {response.status}")
        try:
            data = json.loads(response.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            return failed("execution_error", "search provider did not answer with JSON")
        results = _brave(data) if self._config.provider == "brave" else _searxng(data)
        return ok(provider=self._config.provider, results=results[:count])


def _entry(title: Any, url: Any, snippet: Any) -> dict[str, str] | None:
    if not isinstance(url, str) or not url:
        return None
    return {
        "title": title if isinstance(title, str) else url,
        "url": url,
        "snippet": snippet if isinstance(snippet, str) else "",
    }


def _searxng(data: Any) -> list[dict[str, str]]:
    items = data.get("results") if isinstance(data, dict) else None
    found = [
        _entry(i.get("title"), i.get("url"), i.get("content"))
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict)
    ]
    return [e for e in found if e is not None]


def _brave(data: Any) -> list[dict[str, str]]:
    web = data.get("web") if isinstance(data, dict) else None
    items = web.get("results") if isinstance(web, dict) else None
    found = [
        _entry(i.get("title"), i.get("url"), i.get("description"))
        for i in (items if isinstance(items, list) else [])
        if isinstance(i, dict)
    ]
    return [e for e in found if e is not None]
