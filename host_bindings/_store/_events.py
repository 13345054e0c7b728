"""Searching conversation events, the same on both backends: keyword matches from
``events_fts``, nearest vectors from a scan of the user's ``event_vectors``, fused by
weighted reciprocal rank as notes are (:func:`._fusion.fuse`, each event its own group).

A backend passes the function that runs one statement and the SQL of its cosine distance
between two float32 blobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import _rows as rows
from . import _schema as schema
from ._fusion import fts_query, fuse, max_distance, pack_vector, pool_size, query_words
from ._protocol import ConversationHit

Run = Callable[[str, Sequence[Any]], Sequence[Sequence[Any]]]
"""Runs one statement with its arguments; its rows."""


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
    expression = fts_query(user_id, query_words(query_text), ()) if fts_weight > 0 else None
    if expression is not None:
        keyword = [
            (int(r[0]), int(r[0])) for r in run(schema.EVENT_SEARCH, (expression, pool, user_id))
        ]
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
) -> list[tuple[str, Sequence[Any]]]:
    """The statements that store ``(event id, vector)`` pairs of ``model``."""
    statements: list[tuple[str, Sequence[Any]]] = []
    for event_id, vector in vectors:
        if not vector:
            raise ValueError("an event's vector must not be empty")
        key = rows.model_key(model, len(vector))
        statements.append((schema.SAVE_EVENT_VECTOR, (key, pack_vector(vector), event_id, user_id)))
    return statements
