"""Embedders: the OpenAI-compatible client against a real server on 127.0.0.1, and the
deterministic hashing embedder."""

from __future__ import annotations

import json
import math
import threading
import time
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from toolcage.host_bindings._store import EmbeddingError, HashingEmbedder, OpenAIEmbedder
from toolcage.host_bindings._store._hashing import CACHE_BYTES

REFERENCE = HashingEmbedder(8)


class EmbeddingsServer:
    """``POST /v1/embeddings`` answering with hashing vectors; ``script`` holds statuses to
    answer first (then 200), ``requests`` what was asked."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str]]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        self.hang = False
        self.vector_length = 8
        self.padding = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                owner.headers.append(dict(self.headers))
                if owner.hang:
                    owner.release.wait()
                    return
                status, extra = owner.script.pop(0) if owner.script else (200, {})
                if status == 200:
                    data = [
                        {"index": i, "embedding": HashingEmbedder(owner.vector_length).embed_one(t)}
                        for i, t in reversed(list(enumerate(body["input"])))
                    ]
                    payload = json.dumps({"data": data, "pad": "x" * owner.padding}).encode()
                else:
                    payload = json.dumps({"error": {"message": "try later"}}).encode()
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()


@pytest.fixture
def server() -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer()
    yield server
    server.close()


def make(server: EmbeddingsServer, **options: Any) -> OpenAIEmbedder:
    options.setdefault("api_key_env", None)
    return OpenAIEmbedder(base_url=server.base_url, model="m", dimensions=8, **options)


def later(seconds: float = 30.0) -> float:
    return time.monotonic() + seconds


class TestOpenAIEmbedder:
    def test_texts_go_in_batches_and_come_back_in_order(self, server: EmbeddingsServer) -> None:
        embedder = make(server, batch_size=2)
        texts = ["one", "two words", "three", "four", "five"]
        vectors = embedder.embed(texts, later())
        embedder.close()
        assert vectors == [REFERENCE.embed_one(text) for text in texts]
        assert [request["input"] for request in server.requests] == [
            ["one", "two words"],
            ["three", "four"],
            ["five"],
        ]
        assert server.requests[0]["model"] == "m"
        assert "dimensions" not in server.requests[0]

    def test_429_and_5xx_are_retried_with_backoff(self, server: EmbeddingsServer) -> None:
        server.script = [(429, {"Retry-After": "2"}), (503, {})]
        pauses: list[float] = []
        embedder = make(server, backoff=0.5, sleep=pauses.append)
        assert embedder.embed(["tea"], later()) == [REFERENCE.embed_one("tea")]
        embedder.close()
        assert pauses == [2.0, 1.0]  # Retry-After, then 0.5 * 2**1
        assert len(server.requests) == 3

    def test_it_gives_up_after_max_retries(self, server: EmbeddingsServer) -> None:
        server.script = [(500, {})] * 3
        embedder = make(server, max_retries=2, sleep=lambda _: None)
        with pytest.raises(EmbeddingError, match="failed 3 times: HTTP 500"):
            embedder.embed(["tea"], later())
        embedder.close()

    def test_a_client_error_is_not_retried(self, server: EmbeddingsServer) -> None:
        server.script = [(400, {})]
        embedder = make(server, sleep=lambda _: None)
        with pytest.raises(EmbeddingError, match="refused"):
            embedder.embed(["tea"], later())
        embedder.close()
        assert len(server.requests) == 1

    def test_a_backoff_past_the_deadline_is_not_waited(self, server: EmbeddingsServer) -> None:
        server.script = [(429, {"Retry-After": "3600"})]
        pauses: list[float] = []
        embedder = make(server, sleep=pauses.append)
        with pytest.raises(EmbeddingError, match="ran out of time"):
            embedder.embed(["tea"], later(60))
        embedder.close()
        assert pauses == []

    def test_a_passed_deadline_sends_nothing(self, server: EmbeddingsServer) -> None:
        embedder = make(server)
        with pytest.raises(EmbeddingError, match="ran out of time"):
            embedder.embed(["tea"], time.monotonic() - 1)
        embedder.close()
        assert server.requests == []

    def test_a_hanging_server_is_given_up_at_the_deadline(self, server: EmbeddingsServer) -> None:
        server.hang = True
        embedder = make(server, max_retries=0)
        with pytest.raises(EmbeddingError):
            embedder.embed(["tea"], later(0.5))
        embedder.close()

    def test_the_api_key_comes_from_the_environment(
        self, server: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TEST_EMBEDDINGS_KEY", "sk-test")
        embedder = make(server, api_key_env="TEST_EMBEDDINGS_KEY", request_dimensions=True)
        embedder.embed(["tea"], later())
        embedder.close()
        assert server.headers[0]["Authorization"] == "Bearer sk-test"
        assert server.requests[0]["dimensions"] == 8

    def test_vectors_of_the_wrong_length_are_refused(self, server: EmbeddingsServer) -> None:
        server.vector_length = 4
        embedder = make(server)
        with pytest.raises(EmbeddingError, match="another length"):
            embedder.embed(["tea"], later())
        embedder.close()

    def test_an_oversized_answer_is_refused(self, server: EmbeddingsServer) -> None:
        server.padding = 200_000
        embedder = make(server)
        with pytest.raises(EmbeddingError, match="more than"):
            embedder.embed(["tea"], later())
        embedder.close()


class TestHashingEmbedder:
    def test_vectors_are_deterministic_unit_vectors(self) -> None:
        first, second = HashingEmbedder(384), HashingEmbedder(384)
        [a] = first.embed(["Tea with lemon"], later())
        assert a == second.embed_one("tea WITH lemon")
        assert len(a) == 384
        assert math.isclose(sum(x * x for x in a), 1.0)
        assert first.embed_one(" \n") == [0.0] * 384
        assert first.embed_one("!!!") == first.embed_one(" !!! ")  # its text is its term

    def test_shared_words_and_synonyms_bring_vectors_together(self) -> None:
        embedder = HashingEmbedder(384, synonyms={"automobile": "car"})

        def cosine(x: str, y: str) -> float:
            a, b = embedder.embed_one(x), embedder.embed_one(y)
            return sum(p * q for p, q in zip(a, b, strict=True))

        assert cosine("red car", "automobile") > 0.6
        assert abs(cosine("red car", "blue sky")) < 0.3
        assert embedder.model != HashingEmbedder(384).model

    def test_the_word_cache_stays_within_its_bytes(self) -> None:
        """Three times as many distinct words as fit: the cache keeps what fits by its own
        accounting, which tracemalloc confirms."""
        assert CACHE_BYTES == 16 * 1024 * 1024  # about 5,000 words of 384 dimensions
        limit = 1024 * 1024
        embedder = HashingEmbedder(384, cache_bytes=limit)
        words = [f"word{n}" for n in range(3 * limit // (384 * 8))]
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for start in range(0, len(words), 40):
                embedder.embed([" ".join(words[start : start + 40])], later())
                assert embedder.directions.bytes <= limit
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        held = embedder.directions.bytes
        assert held > limit * 0.99  # full, not emptied
        assert len(embedder.directions) < len(words) / 2
        assert grown < held * 1.1  # the accounting is what the entries take

    def test_an_evicted_or_uncached_word_gives_the_same_vector(self) -> None:
        small = HashingEmbedder(384, cache_bytes=20_000)  # a handful of words
        uncached = HashingEmbedder(384, cache_bytes=0)
        first = small.embed_one("tea with lemon")
        small.embed([f"filler{n}" for n in range(50)], later())
        assert 0 < len(small.directions) < 10
        assert small.embed_one("tea with lemon") == first == uncached.embed_one("tea with lemon")
        assert len(uncached.directions) == uncached.directions.bytes == 0
