"""Rows of both backends' statements, as the Protocol's values."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from toolcage.policies import Principal

from . import _schema as schema
from ._fusion import Fused
from ._protocol import ConversationHit, NoteHit, NoteRecord, Pad


def writer(principal: Principal) -> str:
    """How the principal that writes a note, an event or a pad is stored with it: its
    ``to_record()`` as compact JSON (``Principal.from_record`` reads it back)."""
    return json.dumps(principal.to_record(), separators=(",", ":"), sort_keys=True)


def record(row: Sequence[Any]) -> NoteRecord:
    """A :class:`NoteRecord` from a row of ``schema.NOTE_RECORD``."""
    return NoteRecord(
        note_id=row[0],
        chunk_count=int(row[5]),
        tags=tuple(json.loads(row[1])),
        model=row[2],
        created_at=row[3],
        updated_at=row[4],
    )


def hits(fused: Sequence[Fused], rows: Iterable[Sequence[Any]]) -> list[NoteHit]:
    """The fused notes, in order, from rows of ``schema.HIT_ROWS``; a note deleted since
    its chunk was ranked is left out."""
    by_chunk = {int(row[5]): row for row in rows}
    found = []
    for entry in fused:
        row = by_chunk.get(entry.best_chunk)
        if row is None:
            continue
        found.append(
            NoteHit(
                note_id=row[1],
                text=row[7],
                chunk_index=int(row[6]),
                score=entry.score,
                tags=tuple(json.loads(row[2])),
                created_at=row[3],
                updated_at=row[4],
                vector_rank=entry.vector_rank,
                keyword_rank=entry.keyword_rank,
            )
        )
    return found


def hit_query(user_id: str, fused: Sequence[Fused]) -> tuple[str, tuple[Any, ...]]:
    """``schema.HIT_ROWS`` and its arguments for the fused notes' best chunks."""
    sql = schema.HIT_ROWS.format(marks=schema.marks(len(fused)))
    return sql, (user_id, user_id, *[entry.best_chunk for entry in fused])


ROLES = ("user", "assistant")
"""Who said a conversation event's text."""


def check_events(events: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The events worth storing (those with text); refuses an unknown role."""
    for role, _ in events:
        if role not in ROLES:
            raise ValueError(f"an event's role is one of {', '.join(ROLES)}, not {role!r}")
    return [(role, text) for role, text in events if text.strip()]


def conversation_hits(
    fused: Sequence[Fused], rows: Iterable[Sequence[Any]]
) -> list[ConversationHit]:
    """The fused events, in order, from rows of ``schema.EVENT_ROWS``."""
    by_id = {int(row[0]): row for row in rows}
    return [
        ConversationHit(
            session_id=row[1],
            role=row[2],
            text=row[3],
            score=entry.score,
            created_at=row[4],
            vector_rank=entry.vector_rank,
            keyword_rank=entry.keyword_rank,
        )
        for entry in fused
        if (row := by_id.get(entry.best_chunk)) is not None
    ]


def event_rows_query(user_id: str, fused: Sequence[Fused]) -> tuple[str, tuple[Any, ...]]:
    """``schema.EVENT_ROWS`` and its arguments for the fused events."""
    sql = schema.EVENT_ROWS.format(marks=schema.marks(len(fused)))
    return sql, (user_id, *[entry.best_chunk for entry in fused])


def model_key(model: str, dimensions: int) -> str:
    """How an event vector's model is stored: the model and its dimensions."""
    return f"{model}/{dimensions}"


def pad(session_id: str, row: Sequence[Any] | None) -> Pad | None:
    """A :class:`Pad` from ``(items, updated_at)``, or ``None`` for no row."""
    if row is None:
        return None
    return Pad(session_id=session_id, items=tuple(json.loads(row[0])), updated_at=row[1])


def model_name(model: str, dimensions: int) -> str:
    """How a model and its dimensions are named in errors."""
    return f"{model} ({dimensions} dimensions)"


def stored_model(meta: dict[Any, Any]) -> tuple[str, int] | None:
    """The stored vectors' model and dimensions from ``store_meta`` rows, if any."""
    if "embedding_model" not in meta:
        return None
    return str(meta["embedding_model"]), int(meta["dimensions"])


def check_chunks(
    chunks: Sequence[str], vectors: Sequence[Sequence[float]] | None, model: str | None
) -> None:
    """Refuse a note that no backend could store: no chunks, vectors that do not fit."""
    if not chunks:
        raise ValueError("a note needs at least one chunk")
    if vectors is not None:
        if len(vectors) != len(chunks):
            raise ValueError("one vector per chunk")
        if model is None:
            raise ValueError("vectors need the model that made them")
        if len({len(vector) for vector in vectors}) != 1 or not vectors[0]:
            raise ValueError("vectors must all have the same, non-zero length")


META_MODEL = "SELECT key, value FROM store_meta WHERE key IN ('embedding_model', 'dimensions')"
