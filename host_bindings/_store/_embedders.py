"""An embedder over the OpenAI-compatible ``/v1/embeddings`` API (OpenAI, Ollama, vLLM,
llama.cpp's server, ...), through httpx.

Texts are sent in batches of ``batch_size``; a batch that meets 429 or a 5xx status, a
connection error or a read timeout is sent again after an exponential backoff (or the
server's ``Retry-After``, when shorter than what is left), until ``max_retries`` or the
deadline. Every request's timeout is what remains of the deadline, and a response larger
than a batch's vectors can need is refused unread.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from ._protocol import EmbeddingError, remaining

MAX_BYTES_PER_NUMBER = 32
"""A response may hold at most this many bytes per returned number (plus a fixed slack)."""


class OpenAIEmbedder:
    """Vectors from an ``/v1/embeddings`` endpoint::

        embedder = OpenAIEmbedder(
            base_url="http://127.0.0.1:11434/v1", model="nomic-embed-text", dimensions=768
        )
        vectors = embedder.embed(["tea with lemon"], deadline=time.monotonic() + 10)
        embedder.close()

    The API key is ``api_key``, else the environment variable ``api_key_env``, else none
    (local servers need none).
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dimensions: int,
        api_key: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        batch_size: int = 64,
        max_retries: int = 4,
        backoff: float = 0.5,
        request_dimensions: bool = False,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if batch_size < 1 or dimensions < 1 or max_retries < 0:
            raise ValueError("batch_size and dimensions must be positive, max_retries >= 0")
        base = base_url.rstrip("/")
        self._url = base if base.endswith("/embeddings") else f"{base}/embeddings"
        self._model = model
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._backoff = backoff
        self._request_dimensions = request_dimensions
        self._sleep = sleep
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(headers=headers, transport=transport, follow_redirects=False)

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: Sequence[str], deadline: float) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            vectors += self._embed_batch(list(texts[start : start + self._batch_size]), deadline)
        return vectors

    def _embed_batch(self, batch: list[str], deadline: float) -> list[list[float]]:
        body: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._request_dimensions:
            body["dimensions"] = self._dimensions
        limit = len(batch) * self._dimensions * MAX_BYTES_PER_NUMBER + 65_536
        for attempt in range(self._max_retries + 1):
            left = remaining(deadline)
            if left <= 0:
                raise EmbeddingError(f"embedding with {self._model!r} ran out of time")
            retry_after: float | None = None
            try:
                status, payload, retry_after = self._post(body, left, limit)
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if status == 200:
                    return self._vectors(payload, len(batch))
                failure = f"HTTP {status}: {payload[:200].decode(errors='replace')}"
                if status != 429 and status < 500:
                    raise EmbeddingError(f"{self._url} refused the embedding request: {failure}")
            if attempt == self._max_retries:
                break
            pause = self._backoff * 2**attempt
            if retry_after is not None:
                pause = max(pause, retry_after)
            if pause >= remaining(deadline):
                raise EmbeddingError(f"embedding with {self._model!r} ran out of time ({failure})")
            self._sleep(pause)
        raise EmbeddingError(f"{self._url} failed {self._max_retries + 1} times: {failure}")

    def _post(
        self, body: dict[str, Any], timeout: float, limit: int
    ) -> tuple[int, bytes, float | None]:
        with self._client.stream("POST", self._url, json=body, timeout=timeout) as response:
            data = bytearray()
            for piece in response.iter_bytes():
                data += piece
                if len(data) > limit:
                    raise EmbeddingError(f"{self._url} answered with more than {limit} bytes")
            return response.status_code, bytes(data), _retry_after(response)

    def _vectors(self, payload: bytes, count: int) -> list[list[float]]:
        try:
            items = sorted(json.loads(payload)["data"], key=lambda item: item["index"])
            vectors = [[float(x) for x in item["embedding"]] for item in items]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(f"{self._url} answered with no embeddings: {exc}") from exc
        if len(vectors) != count or any(len(v) != self._dimensions for v in vectors):
            raise EmbeddingError(
                f"{self._url} answered {len(vectors)} vectors for {count} texts, or vectors"
                f" of another length than {self._dimensions}"
            )
        return vectors


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
