"""Conversation events, the same on both backends: recorded with the turn's principal
and keyword-indexed in the user's events corpus (:mod:`._keywords`); searched by keyword
there and by a scan of the user's ``event_vectors``, fused by weighted reciprocal rank as
notes are (:func:`._fusion.fuse`, each event its own group).

A backend runs the statements :func:`record` returns in one transaction, and passes the
function that runs one statement and the SQL of its cosine distance between two float32
blobs.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolcage.policies import Principal

from . import _keywords as keywords
from . import _rows as rows
from . import _schema as schema
from ._fusion import fuse, max_distance, pack_vector, pool_size
from ._keywords import Run, Statement
from ._protocol import ConversationHit


def record(principal: Principal, events: Sequence[tuple[str, str]]) -> tuple[list[Statement], int]:
    """The statements storing ``(role, text)`` events of the principal's user and session,
    in order, each with the principal as its writer, and how many events they store."""
    kept = rows.check_events(events)
    if not kept:
        return [], 0
    user_id, writer = principal.user_id, rows.writer(principal)
    statements = [keywords.corpus_row(user_id, keywords.EVENTS)]
    for role, text in kept:  # each event's id is the last inserted row when it is indexed
        statements.append(
            (schema.INSERT_EVENT, (user_id, principal.session_id, role, text, writer))
        )
        statements += keywords.index(user_id, keywords.EVENTS, ("last_insert_rowid()", ()), text)
    return statements, len(kept)


def search_events(
    run: Run,
    distance: str,
    user_id: str,
    query_text: str,
    query_vector: Sequence[float] | None,
    *,
    top_k: int,
    vector_weight: float,
    fts_weight: float,
    model: str | None,
    min_similarity: float | None,
) -> list[ConversationHit]:
    """The user's best ``top_k`` events (see ``StateStore.search_conversation``)."""
    if top_k < 1:
        return []
    pool = pool_size(top_k)
    keyword: list[tuple[int, int]] = []
    if fts_weight > 0:
        keyword = keywords.search(run, user_id, keywords.EVENTS, query_text, limit=pool)
    nearest: list[tuple[int, int]] = []
    if query_vector is not None and vector_weight > 0 and model is not None:
        found = run(
            schema.nearest_events(distance),
            (
                pack_vector(query_vector),
                user_id,
                rows.model_key(model, len(query_vector)),
                max_distance(min_similarity),
                pool,
            ),
        )
        nearest = [(int(r[0]), int(r[0])) for r in found]
    fused = fuse(nearest, keyword, vector_weight=vector_weight, fts_weight=fts_weight, top_k=top_k)
    if not fused:
        return []
    sql, args = rows.event_rows_query(user_id, fused)
    return rows.conversation_hits(fused, run(sql, args))


def unembedded(
    run: Run, user_id: str, model: str, dimensions: int, limit: int
) -> list[tuple[int, str]]:
    """``(id, text)`` of the user's newest ``limit`` events without a vector of ``model``."""
    found = run(schema.UNEMBEDDED_EVENTS, (rows.model_key(model, dimensions), user_id, limit))
    return [(int(r[0]), str(r[1])) for r in found]


def vector_rows(
    user_id: str, model: str, vectors: Sequence[tuple[int, Sequence[float]]]
) -> list[Statement]:
    """The statements that store ``(event id, vector)`` pairs of ``model``."""
    statements: list[Statement] = []
    for event_id, vector in vectors:
        if not vector:
            raise ValueError("an event's vector must not be empty")
        key = rows.model_key(model, len(vector))
        statements.append((schema.SAVE_EVENT_VECTOR, (key, pack_vector(vector), event_id, user_id)))
    return statements
