"""Stores of both backends for the contract tests: an embedded SQLite file, and a libSQL
server endpoint on 127.0.0.1 (see :mod:`.libsql_server`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from toolcage.host_bindings._store import HashingEmbedder, StateStore, open_store

from .libsql_server import LibsqlServer

TOKEN = "test-token"  # noqa: S105 -- the test server's own token

SYNONYMS = {"automobile": "car", "vehicle": "car", "beverage": "tea"}
"""Words the test embedder treats as one meaning, so a note can match by meaning alone."""

Opener = Callable[[], StateStore]


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(384, synonyms=SYNONYMS)


@pytest.fixture(params=["embedded", "remote"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens (and reopens) one store; every store it opened is closed after the test."""
    opened: list[StateStore] = []
    server: LibsqlServer | None = None
    if request.param == "embedded":
        url, token = "sqlite:state/state.db", None
    else:
        server = LibsqlServer(tmp_path / "remote.db", token=TOKEN)
        url, token = server.url, TOKEN

    def open_one() -> StateStore:
        store = open_store(url, base_dir=tmp_path, auth_token=token)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()
    if server is not None:
        server.close()


@pytest.fixture
def store(opener: Opener) -> StateStore:
    return opener()
