"""The remote state store: a libSQL server, through libsql-client's HTTP client.

libsql-client speaks to ``http(s)://`` URLs with the server's HTTP API (``/v1/execute``,
``/v1/batch``), which has no interactive transactions; a ``batch`` is one transaction
(``BEGIN``, each statement on the previous one's success, ``COMMIT`` or ``ROLLBACK``).
So every write here is one batch whose statements find their rows by ``(user_id,
note_id)`` with ``INSERT … SELECT``: a replace of a note the user does not have matches
no row in any statement and changes nothing, and the batch's first statement says
whether the note was there.

The embedding model is claimed once (``INSERT OR IGNORE`` into ``store_meta``: of two
hosts claiming different models at once, one wins and the other is refused), and every
write with vectors begins with a guard statement that fails, rolling its batch back,
unless the stored model is still the write's; so a host that kept saving after another
one dropped the vectors and claimed another model is refused, atomically.

Vectors live in ``chunk_vectors`` as ``F32_BLOB(dimensions)``, indexed by user, and a
search ranks the user's (tagged) chunks exactly by cosine distance. libSQL's own vector
index (``libsql_vector_idx``) is not used: it spans every user, so the neighbours it
returns for one user's query, and how many of them are that user's, depend on what other
users stored; the exact scan reads the user's rows only and costs what they hold.

The client, its lifecycle, error translation and migrations are the remote backend's
(:mod:`toolcage.host_bindings._backends._remote`); this module keeps only the SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolcage.policies import Principal

from .._backends._remote import REQUEST_TIMEOUT, RemoteBackend
from . import _events as conversation
from . import _keywords as keywords
from . import _libsql_statements as statements_for
from . import _rows as rows
from . import _schema as schema
from ._counters import RemoteCounters
from ._fusion import fuse, max_distance, pack_vector, pool_size
from ._keywords import Statement
from ._protocol import (
    ConversationHit,
    EmbeddingModelMismatch,
    NoteHit,
    NoteRecord,
    Pad,
    StoreError,
)


class RemoteStore(RemoteBackend):
    """A :class:`~._protocol.StateStore` on the libSQL server at ``endpoint``::

    store = RemoteStore("https://db.example.net", url="libsql://db.example.net",
                        auth_token=token)
    """

    def __init__(
        self,
        endpoint: str,
        *,
        url: str,
        auth_token: str | None = None,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self._claimed: tuple[str, int] | None = None
        super().__init__(
            endpoint, url=url, migrations=schema.STATE, auth_token=auth_token, timeout=timeout
        )

    @property
    def counters(self) -> RemoteCounters:
        """The rate-limit counters kept on the server."""
        return RemoteCounters(self._execute, self._batch)

    def _extra_migration_statements(self) -> list[Statement]:
        stored = self.stored_model()
        if stored is None:
            return []
        # vector tables of an older version: index them by user
        return [(sql, ()) for sql in statements_for.vector_tables(stored[1])]

    # -- notes ---------------------------------------------------------------------------

    def stored_model(self) -> tuple[str, int] | None:
        return rows.stored_model({row[0]: row[1] for row in self._execute(rows.META_MODEL)})

    def _claim_model(
        self, vectors: Sequence[Sequence[float]] | None, model: str | None
    ) -> tuple[str, int] | None:
        """The store's model after claiming it for ``model`` if it had none; refuses another."""
        if not vectors or model is None:
            return self.stored_model()
        given = (model, len(vectors[0]))
        if self._claimed == given:
            return given  # each write's guard checks again, in its batch
        stored = self.stored_model()
        if stored is None:
            self._batch(
                [(sql, ()) for sql in statements_for.vector_tables(given[1])]
                + [
                    ("INSERT OR IGNORE INTO store_meta VALUES ('embedding_model', ?)", (model,)),
                    ("INSERT OR IGNORE INTO store_meta VALUES ('dimensions', ?)", (str(given[1]),)),
                ]
            )
            stored = self.stored_model()
        if stored != given:
            assert stored is not None  # noqa: S101 -- claimed above
            raise EmbeddingModelMismatch(rows.model_name(*stored), rows.model_name(*given))
        self._claimed = given
        return stored

    def _write(
        self,
        statements: list[Statement],
        vectors: Sequence[Sequence[float]] | None,
        model: str | None,
        guard_at: int = 0,
        *,
        again: bool = True,
    ) -> list[list[tuple[Any, ...]]]:
        """Run a write's batch, guarded (at ``guard_at``) when it stores vectors of ``model``;
        once more after claiming the model when the store turns out to hold no vectors."""
        if not vectors or model is None:
            return self._batch(statements)
        given = (model, len(vectors[0]))
        guarded = list(statements)
        guarded[guard_at:guard_at] = statements_for.model_guard(*given)
        try:
            results = self._batch(guarded)
        except StoreError as exc:
            self._claimed = None
            stored = self.stored_model()
            if stored is None and again:  # the vectors were dropped meanwhile
                self._claim_model(vectors, model)
                return self._write(statements, vectors, model, guard_at, again=False)
            if stored is not None and stored != given:
                raise EmbeddingModelMismatch(
                    rows.model_name(*stored), rows.model_name(*given)
                ) from exc
            raise
        del results[guard_at : guard_at + 2]
        return results

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
        tags = list(dict.fromkeys(tags))
        self._claim_model(vectors, model)
        user_id, writer = principal.user_id, rows.writer(principal)
        statements: list[Statement] = [
            (
                schema.INSERT_NOTE,
                (user_id, note_id, json.dumps(tags), model if vectors else None, writer, writer),
            ),
            *statements_for.insert_chunks(user_id, note_id, chunks, vectors, tags),
            (schema.NOTE_RECORD, (user_id, note_id)),
        ]
        return rows.record(self._write(statements, vectors, model)[-1][0])

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
        tags = list(dict.fromkeys(tags))
        stored = self._claim_model(vectors, model)
        user_id, writer = principal.user_id, rows.writer(principal)
        statements: list[Statement] = [
            (schema.NOTE_ROWID, (user_id, note_id)),
            *statements_for.delete_chunks(user_id, note_id, stored is not None),
            (
                schema.UPDATE_NOTE,
                (json.dumps(tags), model if vectors else None, writer, user_id, note_id),
            ),
            *statements_for.insert_chunks(user_id, note_id, chunks, vectors, tags),
            (schema.NOTE_RECORD, (user_id, note_id)),
        ]
        results = self._write(statements, vectors, model, guard_at=1)
        if not results[0]:
            return None
        return rows.record(results[-1][0])

    def delete_note(self, user_id: str, note_id: str) -> bool:
        statements: list[Statement] = [
            (schema.NOTE_ROWID, (user_id, note_id)),
            *statements_for.delete_chunks(user_id, note_id, self.stored_model() is not None),
            ("DELETE FROM notes WHERE user_id = ? AND note_id = ?", (user_id, note_id)),
        ]
        return bool(self._batch(statements)[0])

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
        pool = pool_size(top_k)
        keyword: list[tuple[int, int]] = []
        if fts_weight > 0:
            keyword = keywords.search(
                self._execute,
                user_id,
                keywords.NOTES,
                query_text,
                limit=pool,
                tags=tags,
                budget=keywords.COMMON_TERMS_BUDGET,
            )
        nearest: list[tuple[int, int]] = []
        if query_vector is not None and vector_weight > 0:
            nearest = self._nearest(
                user_id, query_vector, model, tags, pool, max_distance(min_similarity)
            )
        fused = fuse(
            nearest, keyword, vector_weight=vector_weight, fts_weight=fts_weight, top_k=top_k
        )
        if not fused:
            return []
        sql, args = rows.hit_query(user_id, fused)
        return rows.hits(fused, self._execute(sql, args))

    def _nearest(
        self,
        user_id: str,
        query_vector: Sequence[float],
        model: str | None,
        tags: Sequence[str],
        pool: int,
        max_distance: float,
    ) -> list[tuple[int, int]]:
        stored = self.stored_model()
        if stored is None:
            return []  # no vector stored yet: keyword results only
        given = (model or "", len(query_vector))
        if stored != given:
            raise EmbeddingModelMismatch(rows.model_name(*stored), rows.model_name(*given))
        blob = pack_vector(query_vector)
        tag_args: list[Any] = []
        for tag in tags:
            tag_args += [user_id, tag]
        sql = statements_for.NEAREST_EXACT.format(tags=schema.tag_filter("v.chunk_id", len(tags)))
        found = self._execute(sql, (blob, user_id, user_id, *tag_args, max_distance, pool))
        return [(int(r[0]), int(r[1])) for r in found]

    # -- conversation --------------------------------------------------------------------

    def record_events(self, principal: Principal, events: Sequence[tuple[str, str]]) -> int:
        statements, count = conversation.record(principal, events)
        if count:
            self._batch(statements)  # one batch, one transaction
        return count

    def events_to_embed(
        self, user_id: str, model: str, dimensions: int, limit: int
    ) -> list[tuple[int, str]]:
        return conversation.unembedded(self._execute, user_id, model, dimensions, limit)

    def save_event_vectors(
        self, user_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
    ) -> None:
        statements = conversation.vector_rows(user_id, model, vectors)
        if statements:
            self._batch(statements)

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
        return conversation.search_events(
            self._execute,
            "vector_distance_cos(vector32(vector), vector32(?))",
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
        found = self._execute(schema.READ_PAD, (user_id, session_id))
        return rows.pad(session_id, found[0] if found else None)

    def write_pad(self, principal: Principal, items: Sequence[str]) -> Pad:
        user_id, session_id = principal.user_id, principal.session_id
        written = (user_id, session_id, json.dumps(list(items)), rows.writer(principal))
        results = self._batch(
            [(schema.WRITE_PAD, written), (schema.READ_PAD, (user_id, session_id))]
        )
        pad = rows.pad(session_id, results[1][0])
        assert pad is not None  # noqa: S101 -- written in this batch
        return pad

    def clear_pad(self, user_id: str, session_id: str) -> bool:
        results = self._batch(
            [
                (
                    "SELECT 1 FROM pads WHERE user_id = ? AND session_id = ?",
                    (user_id, session_id),
                ),
                ("DELETE FROM pads WHERE user_id = ? AND session_id = ?", (user_id, session_id)),
            ]
        )
        return bool(results[0])

    def drop_vectors(self) -> int:
        if self.stored_model() is None:
            self._execute("DELETE FROM event_vectors")
            return 0
        results = self._batch(
            [
                ("SELECT count(*) FROM chunk_vectors", ()),
                ("DELETE FROM event_vectors", ()),
                ("DROP TABLE IF EXISTS chunk_vectors", ()),
                ("DELETE FROM store_meta WHERE key IN ('embedding_model', 'dimensions')", ()),
                ("UPDATE notes SET model = NULL", ()),
            ]
        )
        return int(results[0][0][0])
