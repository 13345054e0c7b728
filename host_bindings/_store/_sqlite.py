"""The embedded state store: one SQLite file with sqlite-vec.

Opening, closing, connections and transactions are the embedded backend's
(:mod:`toolcage.host_bindings._backends._embedded`), the vector index is
:mod:`._sqlite_vectors`'s, the keyword index :mod:`._keywords`'s; this module keeps notes,
chunks, tags and scratchpads in step with them, one write transaction per change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
from toolcage.policies import Principal

from .._backends._embedded import EmbeddedBackend
from .._backends._sqlite_pool import BUSY_TIMEOUT_MS
from . import _events as conversation
from . import _keywords as keywords
from . import _rows as rows
from . import _schema as schema
from . import _sqlite_vectors as vectors_index
from ._counters_sqlite import EmbeddedCounters
from ._fusion import Fused, fuse, max_distance, pool_size
from ._protocol import ConversationHit, EmbeddingModelMismatch, NoteHit, NoteRecord, Pad


class EmbeddedStore(EmbeddedBackend):
    """A :class:`~._protocol.StateStore` in the SQLite file at ``path``::

    store = EmbeddedStore(Path("state.db"), url="sqlite:state.db")
    store.save_note(Principal("alice"), "note-1", ["tea with lemon"], None, ["drinks"], None)
    store.close()
    """

    def __init__(self, path: Path, *, url: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        super().__init__(path, url=url, migrations=schema.STATE, busy_timeout_ms=busy_timeout_ms)
        self._counters = EmbeddedCounters(self._pool, str(path), url)

    @property
    def counters(self) -> EmbeddedCounters:
        """The rate-limit counters kept in this file."""
        return self._counters

    def _closing(self) -> None:
        self._counters.close()

    # -- notes ---------------------------------------------------------------------------

    def save_note(
        self,
        principal: Principal,
        note_id: str,
        chunks: Sequence[str],
        vectors: Sequence[Sequence[float]] | None,
        tags: Sequence[str],
        model: str | None,
    ) -> NoteRecord:
        rows.check_chunks(chunks, vectors, model)
        tags = _unique_tags(tags)
        user_id, writer = principal.user_id, rows.writer(principal)
        with self._writing() as conn:
            self._claim_model(conn, vectors, model)
            conn.execute(
                schema.INSERT_NOTE,
                (user_id, note_id, json.dumps(tags), model if vectors else None, writer, writer),
            )
            self._insert_chunks(conn, user_id, conn.last_insert_rowid(), chunks, vectors, tags)
            return _record(conn, user_id, note_id)

    def replace_note(
        self,
        principal: Principal,
        note_id: str,
        chunks: Sequence[str],
        vectors: Sequence[Sequence[float]] | None,
        tags: Sequence[str],
        model: str | None,
    ) -> NoteRecord | None:
        rows.check_chunks(chunks, vectors, model)
        tags = _unique_tags(tags)
        user_id = principal.user_id
        with self._writing() as conn:
            row = conn.execute(schema.NOTE_ROWID, (user_id, note_id)).fetchone()
            if row is None:
                return None
            self._claim_model(conn, vectors, model)
            self._delete_chunks(conn, user_id, row[0])
            conn.execute(
                schema.UPDATE_NOTE,
                (
                    json.dumps(tags),
                    model if vectors else None,
                    rows.writer(principal),
                    user_id,
                    note_id,
                ),
            )
            self._insert_chunks(conn, user_id, row[0], chunks, vectors, tags)
            return _record(conn, user_id, note_id)

    def delete_note(self, user_id: str, note_id: str) -> bool:
        with self._writing() as conn:
            row = conn.execute(schema.NOTE_ROWID, (user_id, note_id)).fetchone()
            if row is None:
                return False
            self._delete_chunks(conn, user_id, row[0])
            conn.execute("DELETE FROM notes WHERE user_id = ? AND id = ?", (user_id, row[0]))
            return True

    def _claim_model(
        self, conn: apsw.Connection, vectors: Sequence[Sequence[float]] | None, model: str | None
    ) -> None:
        """Record ``model`` as the store's (creating the vector tables) or refuse another."""
        if not vectors or model is None:
            return
        dimensions = len(vectors[0])
        stored = _stored_model(conn)
        if stored is None:
            vectors_index.create_tables(conn, dimensions)
            conn.executemany(
                "INSERT OR REPLACE INTO store_meta VALUES (?, ?)",
                [("embedding_model", model), ("dimensions", str(dimensions))],
            )
        elif stored != (model, dimensions):
            raise EmbeddingModelMismatch(
                rows.model_name(*stored), rows.model_name(model, dimensions)
            )

    def _insert_chunks(
        self,
        conn: apsw.Connection,
        user_id: str,
        note_rowid: int,
        chunks: Sequence[str],
        vectors: Sequence[Sequence[float]] | None,
        tags: Sequence[str],
    ) -> None:
        conn.execute(*keywords.corpus_row(user_id, keywords.NOTES))
        for index, text in enumerate(chunks):
            conn.execute(
                "INSERT INTO chunks (note_rowid, user_id, chunk_index, text) VALUES (?, ?, ?, ?)",
                (note_rowid, user_id, index, text),
            )
            chunk_id = conn.last_insert_rowid()
            chunk = ("?", (chunk_id,))
            _run_all(conn, keywords.index(user_id, keywords.NOTES, chunk, text, len(tags)))
            conn.executemany(
                "INSERT INTO chunk_tags (user_id, tag, chunk_id) VALUES (?, ?, ?)",
                [(user_id, tag, chunk_id) for tag in tags],
            )
            if vectors:
                vectors_index.insert(conn, user_id, chunk_id, vectors[index], tags)

    def _delete_chunks(self, conn: apsw.Connection, user_id: str, note_rowid: int) -> None:
        ids = [row[0] for row in conn.execute(schema.CHUNK_IDS, (user_id, note_rowid))]
        row = conn.execute("SELECT tags FROM notes WHERE id = ?", (note_rowid,)).fetchone()
        tag_count = len(json.loads(row[0])) if row else 0
        with_vectors = _stored_model(conn) is not None
        _run_all(
            conn,
            keywords.unindex(user_id, keywords.NOTES, (schema.CHUNK_IDS, (user_id, note_rowid))),
        )
        for chunk_id in ids:
            conn.execute("DELETE FROM chunk_tags WHERE chunk_id = ?", (chunk_id,))
            if with_vectors:
                vectors_index.delete(conn, user_id, chunk_id, tag_count)
        conn.execute(
            "DELETE FROM chunks WHERE user_id = ? AND note_rowid = ?", (user_id, note_rowid)
        )

    # -- search --------------------------------------------------------------------------

    def search_notes(
        self,
        user_id: str,
        query_text: str,
        query_vector: Sequence[float] | None,
        *,
        top_k: int,
        tags: Sequence[str] = (),
        vector_weight: float = 1.0,
        fts_weight: float = 1.0,
        model: str | None = None,
        min_similarity: float | None = None,
    ) -> list[NoteHit]:
        if top_k < 1:
            return []
        tags = list(dict.fromkeys(tags))
        with self._reading() as conn:
            keyword: list[tuple[int, int]] = []
            if fts_weight > 0:
                keyword = keywords.search(
                    _runner(conn),
                    user_id,
                    keywords.NOTES,
                    query_text,
                    limit=pool_size(top_k),
                    tags=tags,
                    budget=keywords.COMMON_TERMS_BUDGET,
                )
            nearest: list[tuple[int, int]] = []
            if query_vector is not None and vector_weight > 0:
                nearest = _nearest(conn, user_id, query_vector, model, tags, top_k, min_similarity)
            fused = fuse(
                nearest, keyword, vector_weight=vector_weight, fts_weight=fts_weight, top_k=top_k
            )
            return _hits(conn, user_id, fused)

    # -- conversation --------------------------------------------------------------------

    def record_events(self, principal: Principal, events: Sequence[tuple[str, str]]) -> int:
        statements, count = conversation.record(principal, events)
        if count:
            with self._writing() as conn:
                _run_all(conn, statements)
        return count

    def events_to_embed(
        self, user_id: str, model: str, dimensions: int, limit: int
    ) -> list[tuple[int, str]]:
        with self._reading() as conn:
            return conversation.unembedded(_runner(conn), user_id, model, dimensions, limit)

    def save_event_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        statements = conversation.vector_rows(user_id, model, vectors)
        if not statements:
            return
        with self._writing() as conn:
            for sql, args in statements:
                conn.execute(sql, args)

    def search_conversation(
        self,
        user_id: str,
        query_text: str,
        query_vector: Sequence[float] | None = None,
        *,
        top_k: int,
        vector_weight: float = 1.0,
        fts_weight: float = 1.0,
        model: str | None = None,
        min_similarity: float | None = None,
    ) -> list[ConversationHit]:
        with self._reading() as conn:
            return conversation.search_events(
                _runner(conn),
                _COSINE,
                user_id,
                query_text,
                query_vector,
                top_k=top_k,
                vector_weight=vector_weight,
                fts_weight=fts_weight,
                model=model,
                min_similarity=min_similarity,
            )

    # -- scratchpads ---------------------------------------------------------------------

    def read_pad(self, user_id: str, session_id: str) -> Pad | None:
        with self._connected() as conn:
            return _pad(conn, user_id, session_id)

    def write_pad(self, principal: Principal, items: Sequence[str]) -> Pad:
        user_id, session_id = principal.user_id, principal.session_id
        with self._writing() as conn:
            conn.execute(
                schema.WRITE_PAD,
                (user_id, session_id, json.dumps(list(items)), rows.writer(principal)),
            )
            pad = _pad(conn, user_id, session_id)
            assert pad is not None  # noqa: S101 -- written in this transaction
            return pad

    def clear_pad(self, user_id: str, session_id: str) -> bool:
        with self._writing() as conn:
            conn.execute(
                "DELETE FROM pads WHERE user_id = ? AND session_id = ?", (user_id, session_id)
            )
            return bool(conn.changes())

    def checkup(self) -> list[str]:
        """What ``toolcage check`` asks: the damage SQLite finds, after a write transaction
        begun and rolled back (see ``ConnectionPool.checkup`` in the backend's pool)."""
        with self._translated():
            return self._pool.checkup()

    def stored_model(self) -> tuple[str, int] | None:
        with self._connected() as conn:
            return _stored_model(conn)

    def drop_vectors(self) -> int:
        with self._writing() as conn:
            if _stored_model(conn) is None:
                conn.execute("DELETE FROM event_vectors")
                return 0
            row = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()
            conn.execute("DELETE FROM event_vectors")
            vectors_index.drop_tables(conn)
            conn.execute("DELETE FROM store_meta WHERE key IN ('embedding_model', 'dimensions')")
            conn.execute("UPDATE notes SET model = NULL")
            return int(row[0]) if row else 0


# -- helpers -------------------------------------------------------------------------------

_COSINE = "vec_distance_cosine(vec_f32(vector), vec_f32(?))"


def _runner(conn: apsw.Connection) -> keywords.Run:
    def run(sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in conn.execute(sql, args)]

    return run


def _run_all(conn: apsw.Connection, statements: Sequence[keywords.Statement]) -> None:
    for sql, args in statements:
        conn.execute(sql, args)


def _unique_tags(tags: Sequence[str]) -> list[str]:
    unique = list(dict.fromkeys(tags))
    if len(unique) > vectors_index.MAX_TAGS:
        raise ValueError(f"a note carries at most {vectors_index.MAX_TAGS} tags")
    return unique


def _stored_model(conn: apsw.Connection) -> tuple[str, int] | None:
    return rows.stored_model({row[0]: row[1] for row in conn.execute(rows.META_MODEL)})


def _nearest(
    conn: apsw.Connection,
    user_id: str,
    query_vector: Sequence[float],
    model: str | None,
    tags: Sequence[str],
    top_k: int,
    min_similarity: float | None,
) -> list[tuple[int, int]]:
    stored = _stored_model(conn)
    if stored is None:
        return []  # no vector stored yet: keyword results only
    given = (model or "", len(query_vector))
    if stored != given:
        raise EmbeddingModelMismatch(rows.model_name(*stored), rows.model_name(*given))
    return vectors_index.nearest(
        conn, user_id, query_vector, tags, top_k, max_distance(min_similarity)
    )


def _hits(conn: apsw.Connection, user_id: str, fused: Sequence[Fused]) -> list[NoteHit]:
    if not fused:
        return []
    sql, args = rows.hit_query(user_id, fused)
    return rows.hits(fused, conn.execute(sql, args))


def _record(conn: apsw.Connection, user_id: str, note_id: str) -> NoteRecord:
    row = conn.execute(schema.NOTE_RECORD, (user_id, note_id)).fetchone()
    assert row is not None  # noqa: S101 -- written in this transaction
    return rows.record(row)


def _pad(conn: apsw.Connection, user_id: str, session_id: str) -> Pad | None:
    row = conn.execute(schema.READ_PAD, (user_id, session_id)).fetchone()
    return rows.pad(session_id, row)
