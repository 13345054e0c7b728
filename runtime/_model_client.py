"""Model clients: what the agent loop calls to get the model's next message.

:class:`ModelClient` is the seam (one method); :class:`HttpModelClient` is the real one, an
httpx client that speaks a provider's wire format through its adapter, whole or streamed::

    async with HttpModelClient.for_provider(
        "anthropic", base_url="https://api.anthropic.com", api_key=key, model="claude-x",
        stream=True,
    ) as client:
        result = await run_turn(client, runtime, [UserMessage("Tidy my notes.")])

Any OpenAI-compatible server works with ``"openai_chat"`` and its base URL (``.../v1``).
A failed request raises :class:`ModelAPIError`: that is the model's endpoint failing, not a
tool, so it ends the turn rather than becoming a tool result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import httpx

from ._sse import aparse_sse
from .providers import (
    AnthropicAdapter,
    GeminiAdapter,
    ModelRequest,
    ModelResponse,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ProviderAdapter,
)

ADAPTERS: Mapping[str, type[ProviderAdapter]] = {
    "openai_chat": OpenAIChatAdapter,
    "openai_responses": OpenAIResponsesAdapter,
    "anthropic": AnthropicAdapter,
    "gemini": GeminiAdapter,
}
"""Provider names accepted by :meth:`HttpModelClient.for_provider`."""


class ModelAPIError(RuntimeError):
    """The model endpoint failed: transport error, HTTP error status, or an unreadable body."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ModelClient(Protocol):
    """Gets the model's answer to a conversation."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The model's next message (with its tool calls and usage)."""
        ...


class HttpModelClient:
    """A provider endpoint over HTTP, through one :class:`ProviderAdapter`."""

    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        base_url: str,
        api_key: str,
        model: str,
        stream: bool = False,
        timeout: float = 120.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.adapter = adapter
        self.model = model
        self.stream = stream
        self._base_url = base_url.rstrip("/")
        self._headers = adapter.auth_headers(api_key)
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)

    @classmethod
    def for_provider(
        cls,
        provider: str,
        *,
        base_url: str,
        api_key: str,
        model: str,
        stream: bool = False,
        timeout: float = 120.0,
    ) -> HttpModelClient:
        """A client for one of :data:`ADAPTERS` by name."""
        try:
            adapter = ADAPTERS[provider]()
        except KeyError:
            known = ", ".join(sorted(ADAPTERS))
            raise ValueError(f"unknown provider {provider!r}; known: {known}") from None
        return cls(
            adapter,
            base_url=base_url,
            api_key=api_key,
            model=model,
            stream=stream,
            timeout=timeout,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = self.adapter.request_body(request, model=self.model, stream=self.stream)
        url = self._base_url + self.adapter.endpoint(model=self.model, stream=self.stream)
        try:
            if not self.stream:
                response = await self._http.post(url, json=body, headers=self._headers)
                _raise_for_status(response.status_code, response.text)
                return self.adapter.parse_response(_json_object(response.text))
            async with self._http.stream("POST", url, json=body, headers=self._headers) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    _raise_for_status(resp.status_code, resp.text)
                decoder = self.adapter.stream_decoder()
                async for event in aparse_sse(resp.aiter_lines()):
                    data = _json_object(event.data)
                    if event.event == "error" or data.get("type") == "error":
                        raise ModelAPIError(f"the stream reported an error: {event.data[:500]}")
                    decoder.feed(event.event, data)
                return decoder.finish()
        except httpx.HTTPError as exc:
            raise ModelAPIError(f"{type(exc).__name__}: {exc} ({url})") from exc

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _raise_for_status(status: int, text: str) -> None:
    if status >= 400:
        raise ModelAPIError(f"HTTP {status}: {text[:500]}", status=status)


def _json_object(text: str) -> Mapping[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ModelAPIError(f"not JSON: {text[:200]!r}") from exc
    if not isinstance(value, dict):
        raise ModelAPIError(f"not a JSON object: {text[:200]!r}")
    return value
