"""Model clients: what the agent loop calls to get the model's next message.

:class:`ModelClient` is the seam (one method); :class:`HttpModelClient` is the real one, an
httpx client that speaks a provider's wire format through its adapter, whole or streamed::

    async with HttpModelClient.for_provider(
        "anthropic", base_url="https://api.anthropic.com", api_key=key, model="claude-x",
        stream=True,
    ) as client:
        result = await run_turn(client, runtime, [UserMessage("Tidy my notes.")])

Any OpenAI-compatible server works with ``"openai_chat"`` and its base URL (``.../v1``).
A rate limit or overload answer (429, 500, 502, 503, 504, 529) and a connection that cannot
be made are retried, ``retries`` times, after the server's ``Retry-After`` (capped) or an
exponential backoff; nothing else is, since the request may have been acted on. A request
that still fails raises :class:`ModelAPIError`: that is the model's endpoint failing, not a
tool, so it ends the turn rather than becoming a tool result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import anyio
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

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
"""Answers that say "not now": rate limits and overloads (529 is Anthropic's)."""
MAX_RETRY_AFTER = 60.0
"""Longest ``Retry-After`` honoured, in seconds; a longer one fails the request."""


class ModelAPIError(RuntimeError):
    """The model endpoint failed: transport error, HTTP error status, or an unreadable body."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        """Whether the same request may be sent again (nothing was acted on)."""
        self.retry_after = retry_after
        """Seconds the server asked to wait, if it said."""


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
        retries: int = 2,
        backoff: float = 1.0,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self.adapter = adapter
        self.model = model
        self.stream = stream
        self.retries = retries
        """Times a retryable failure is tried again."""
        self.backoff = backoff
        """Seconds before the first retry when the server names no delay; doubled each time."""
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
        retries: int = 2,
        backoff: float = 1.0,
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
            retries=retries,
            backoff=backoff,
        )

    async def complete(self, request: ModelRequest) -> ModelResponse:
        body = self.adapter.request_body(request, model=self.model, stream=self.stream)
        url = self._base_url + self.adapter.endpoint(model=self.model, stream=self.stream)
        attempt = 0
        while True:
            try:
                return await self._send(url, body)
            except ModelAPIError as exc:
                if not exc.retryable or attempt >= self.retries:
                    raise
                delay = exc.retry_after
                if delay is None:
                    delay = self.backoff * 2**attempt
                attempt += 1
                await anyio.sleep(delay)

    async def _send(self, url: str, body: Mapping[str, Any]) -> ModelResponse:
        try:
            if not self.stream:
                response = await self._http.post(url, json=body, headers=self._headers)
                _raise_for_status(response)
                return self.adapter.parse_response(_json_object(response.text))
            async with self._http.stream("POST", url, json=body, headers=self._headers) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    _raise_for_status(resp)
                decoder = self.adapter.stream_decoder()
                async for event in aparse_sse(resp.aiter_lines()):
                    data = _json_object(event.data)
                    if event.event == "error" or data.get("type") == "error":
                        raise ModelAPIError(f"the stream reported an error: {event.data[:500]}")
                    decoder.feed(event.event, data)
                return decoder.finish()
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise ModelAPIError(f"{type(exc).__name__}: {exc} ({url})", retryable=True) from exc
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


def _raise_for_status(response: httpx.Response) -> None:
    status = response.status_code
    if status < 400:
        return
    retry_after = _seconds(response.headers.get("retry-after"))
    retryable = status in RETRY_STATUSES and (retry_after is None or retry_after <= MAX_RETRY_AFTER)
    raise ModelAPIError(
        f"HTTP {status}: {response.text[:500]}",
        status=status,
        retryable=retryable,
        retry_after=retry_after,
    )


def _seconds(value: str | None) -> float | None:
    """A ``Retry-After`` given in seconds (an HTTP date is treated as not given)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _json_object(text: str) -> Mapping[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ModelAPIError(f"not JSON: {text[:200]!r}") from exc
    if not isinstance(value, dict):
        raise ModelAPIError(f"not a JSON object: {text[:200]!r}")
    return value
