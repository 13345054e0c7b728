"""Stores of both backends for the contract tests: an embedded SQLite file, and a libSQL
server endpoint on 127.0.0.1 (see :mod:`.libsql_server`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from toolcage.host_bindings._store import HashingEmbedder, StateStore, open_store
from toolcage.policies import Principal

from .libsql_server import LibsqlServer

TOKEN = "test-token"  # noqa: S105 -- the test server's own token

SYNONYMS = {"automobile": "car", "vehicle": "car", "beverage": "tea"}
"""Words the test embedder treats as one meaning, so a note can match by meaning alone."""

Opener = Callable[[], StateStore]


KEYWORD_INDEX_CHECKS = {
    "a posting of a missing document": """
        SELECT count(*) FROM keyword_postings AS p JOIN keyword_corpora AS k ON k.id = p.corpus
        WHERE NOT EXISTS (SELECT 1 FROM chunks AS c WHERE k.kind = 'notes' AND c.id = p.doc
                          AND c.user_id = k.user_id)
          AND NOT EXISTS (SELECT 1 FROM events AS e WHERE k.kind = 'events' AND e.id = p.doc
                          AND e.user_id = k.user_id)""",
    "a word's document count that its postings do not add up to": """
        SELECT count(*) FROM keyword_terms AS t WHERE t.documents <> (
            SELECT count(*) FROM keyword_postings AS p
            WHERE p.corpus = t.corpus AND p.term = t.term)""",
    "a posting of a word the corpus does not count": """
        SELECT count(*) FROM keyword_postings AS p WHERE NOT EXISTS (
            SELECT 1 FROM keyword_terms AS t WHERE t.corpus = p.corpus AND t.term = p.term)""",
    "a corpus whose totals its documents do not add up to": """
        SELECT count(*) FROM keyword_corpora AS k WHERE k.documents <> (
            SELECT count(DISTINCT doc) FROM keyword_postings WHERE corpus = k.id)
          OR k.length <> (SELECT coalesce(sum(length), 0) FROM (SELECT max(length) AS length
            FROM keyword_postings WHERE corpus = k.id GROUP BY doc))""",
}
"""What the keyword index of a consistent store never holds: each query counts such rows."""


def keyword_index_problems(run: Callable[[str], Sequence[Sequence[Any]]]) -> list[str]:
    """The checks of :data:`KEYWORD_INDEX_CHECKS` that find rows, by the store's ``run``."""
    return [name for name, sql in KEYWORD_INDEX_CHECKS.items() if int(run(sql)[0][0])]


def principal(user: str, session: str = "s1") -> Principal:
    """The principal of a write of ``user`` in ``session`` (through the default agent)."""
    return Principal(user_id=user, session_id=session)


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
