"""A store of the schema before per-user keyword statistics and recorded writers (version
5: one FTS5 index of every user's rows; on the remote store, libSQL's vector index of
every user's vectors) is migrated in place on both backends: every note and event is
keyword-indexed under its own user, the shared indexes are gone, the rows written before
keep no writer, and everything keeps working."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import libsql_client
import pytest
from toolcage.host_bindings._store import HashingEmbedder, StateStore, _schema, open_store
from toolcage.host_bindings._store._fusion import pack_vector

from .conftest import TOKEN, keyword_index_problems, principal
from .libsql_server import LibsqlServer

OLD_VERSION = 5
EMBEDDER = HashingEmbedder(64)
NOW = "2026-01-01T00:00:00.000Z"

NOTES: tuple[tuple[str, str, list[str], list[str]], ...] = (  # user, note id, tags, chunks
    ("ada", "note-1", ["home"], ["the spare key is under the mat"]),
    ("ada", "note-2", [], ["tea with lemon", "and a spare cup for guests"]),
    ("bob", "note-1", ["home"], ["bob keeps the spare key in the shed"]),
)
EVENTS = (  # user, session, role, text
    ("ada", "s1", "user", "where is the spare key?"),
    ("ada", "s1", "assistant", "under the mat"),
    ("bob", "s9", "user", "remind me about the shed key"),
)

OLD_REMOTE_VECTORS = (
    "CREATE TABLE chunk_vectors (chunk_id INTEGER PRIMARY KEY, user_id TEXT NOT NULL,"
    " embedding F32_BLOB(64) NOT NULL)",
    "CREATE INDEX chunk_vectors_idx"
    " ON chunk_vectors (libsql_vector_idx(embedding, 'metric=cosine'))",
)
"""The remote store's vector tables as version 5 made them."""

Run = Any  # (sql, args) -> rows


@pytest.fixture(params=["embedded", "remote"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextmanager
def old_database(tmp_path: Path, backend: str) -> Iterator[tuple[str, Run]]:
    """The URL of a version-5 database, and a function running SQL on it directly."""
    if backend == "embedded":
        conn = apsw.Connection(str(tmp_path / "state.db"))
        try:
            yield "sqlite:state.db", lambda sql, args=(): list(conn.execute(sql, args))
        finally:
            conn.close()
        return
    with LibsqlServer(tmp_path / "remote.db", token=TOKEN) as server:
        client = libsql_client.create_client_sync(server.url, auth_token=TOKEN)
        try:
            yield server.url, lambda sql, args=(): list(client.execute(sql, list(args)).rows)
        finally:
            client.close()


def write_version_5(run: Run, backend: str) -> None:
    """Version 5's tables, holding two users' notes (with vectors), events and a pad."""
    remote = backend == "remote"
    run(_schema.META_TABLE)
    for steps in _schema.MIGRATIONS[:OLD_VERSION]:
        for step in steps:
            assert isinstance(step, str)
            run(step)
    run("INSERT INTO store_meta VALUES ('schema_version', ?)", (str(OLD_VERSION),))
    if backend == "remote":
        for sql in OLD_REMOTE_VECTORS:
            run(sql)
        run("INSERT INTO store_meta VALUES ('embedding_model', ?)", (EMBEDDER.model,))
        run("INSERT INTO store_meta VALUES ('dimensions', '64')")
    for user, note_id, tags, chunks in NOTES:
        run(
            "INSERT INTO notes (user_id, note_id, tags, model, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (user, note_id, json.dumps(tags), EMBEDDER.model if remote else None, NOW, NOW),
        )
        [[note_rowid]] = run(
            "SELECT id FROM notes WHERE user_id = ? AND note_id = ?", (user, note_id)
        )
        for index, text in enumerate(chunks):
            run(
                "INSERT INTO chunks (note_rowid, user_id, chunk_index, text) VALUES (?, ?, ?, ?)",
                (note_rowid, user, index, text),
            )
            [[chunk_id]] = run("SELECT max(id) FROM chunks")
            for tag in tags:
                run("INSERT INTO chunk_tags VALUES (?, ?, ?)", (user, tag, chunk_id))
            if backend == "remote":
                run(
                    "INSERT INTO chunk_vectors VALUES (?, ?, vector32(?))",
                    (chunk_id, user, pack_vector(EMBEDDER.embed_one(text))),
                )
    for user, session, role, text in EVENTS:
        run(
            "INSERT INTO events (user_id, session_id, role, text, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (user, session, role, text, NOW),
        )
    run("INSERT INTO pads VALUES ('ada', 's1', '[\"water plants\"]', ?)", (NOW,))


def note_texts(store: StateStore, user: str, query: str, **options: Any) -> list[str]:
    return [hit.text for hit in store.search_notes(user, query, None, top_k=5, **options)]


def column(run: Run, sql: str) -> Sequence[Any]:
    return [row[0] for row in run(sql)]


class TestMigrationFromVersion5:
    def test_notes_events_and_pads_are_kept_and_indexed_per_user(
        self, tmp_path: Path, backend: str
    ) -> None:
        with old_database(tmp_path, backend) as (url, run):
            write_version_5(run, backend)
            store = open_store(url, base_dir=tmp_path, auth_token=TOKEN)
            try:
                assert column(run, "SELECT value FROM store_meta WHERE key = 'schema_version'") == [
                    str(_schema.SCHEMA_VERSION)
                ]
                assert note_texts(store, "ada", "spare key", tags=["home"]) == [
                    "the spare key is under the mat"
                ]
                assert note_texts(store, "ada", "spare") == [
                    "and a spare cup for guests",  # the shorter chunk
                    "the spare key is under the mat",
                ]
                assert note_texts(store, "bob", "spare key") == [
                    "bob keeps the spare key in the shed"
                ]
                found = store.search_conversation("ada", "spare key mat", top_k=5)
                assert [hit.text for hit in found] == ["where is the spare key?", "under the mat"]
                assert store.read_pad("ada", "s1").items == ("water plants",)  # type: ignore[union-attr]
                assert keyword_index_problems(lambda sql: run(sql)) == []
                tables = column(run, "SELECT name FROM sqlite_master")
                assert not {"chunks_fts", "chunks_vocab", "events_fts", "chunk_vectors_idx"} & {
                    str(name) for name in tables
                }
                assert column(run, "SELECT count(*) FROM notes WHERE created_by IS NOT NULL") == [0]
            finally:
                store.close()

    def test_the_migrated_store_takes_writes_and_deletes(
        self, tmp_path: Path, backend: str
    ) -> None:
        with old_database(tmp_path, backend) as (url, run):
            write_version_5(run, backend)
            store = open_store(url, base_dir=tmp_path, auth_token=TOKEN)
            try:
                assert store.delete_note("ada", "note-2") is True
                assert note_texts(store, "ada", "spare") == ["the spare key is under the mat"]
                store.save_note(principal("ada"), "note-3", ["a spare umbrella"], None, [], None)
                replaced = ["the shed key hangs by the door", "spare gloves too"]
                assert store.replace_note(principal("bob"), "note-1", replaced, None, [], None)
                assert note_texts(store, "bob", "shed") == ["the shed key hangs by the door"]
                store.record_events(principal("ada", "s2"), [("user", "spare batteries?")])
                assert note_texts(store, "ada", "umbrella") == ["a spare umbrella"]
                assert [
                    hit.text for hit in store.search_conversation("ada", "batteries", top_k=5)
                ] == ["spare batteries?"]
                assert keyword_index_problems(lambda sql: run(sql)) == []
                if backend == "remote":  # vectors of version 5, searched by user
                    vector = EMBEDDER.embed_one("shed")
                    [hit] = store.search_notes("bob", "shed", vector, top_k=1, model=EMBEDDER.model)
                    assert hit.note_id == "note-1"
                    indexes = column(run, "SELECT name FROM sqlite_master WHERE type = 'index'")
                    assert "chunk_vectors_by_user" in indexes
            finally:
                store.close()
