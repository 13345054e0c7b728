"""The statements of the remote store's writes, and its vector search.

Each write is one batch, so each statement finds its rows by ``(user_id, note_id)``
(``INSERT … SELECT``, ``… WHERE id IN (the note's chunks)``) instead of by ids read back.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import _keywords as keywords
from ._fusion import pack_vector
from ._keywords import Statement

_NOTE_CHUNKS = """
    SELECT c.id FROM chunks AS c JOIN notes AS n ON n.id = c.note_rowid
    WHERE n.user_id = ? AND n.note_id = ? AND c.user_id = ?"""

NEAREST_EXACT = """
    SELECT chunk_id, note_rowid FROM (
        SELECT v.chunk_id, c.note_rowid, vector_distance_cos(v.embedding, vector32(?)) AS d
        FROM chunk_vectors AS v JOIN chunks AS c ON c.id = v.chunk_id
        WHERE v.user_id = ? AND c.user_id = ?{tags})
    WHERE d <= ? ORDER BY d, chunk_id LIMIT ?"""


def model_guard(model: str, dimensions: int) -> list[Statement]:
    """Statements that fail, rolling their batch back, unless the store's vectors are of
    ``model`` and ``dimensions``."""
    return [
        (
            "INSERT INTO model_guard (ok) SELECT coalesce("
            "(SELECT value FROM store_meta WHERE key = 'embedding_model') = ?"
            " AND (SELECT value FROM store_meta WHERE key = 'dimensions') = ?, 0)",
            (model, str(dimensions)),
        ),
        ("DELETE FROM model_guard", ()),
    ]


def vector_tables(dimensions: int) -> list[str]:
    """The vector table for ``dimensions``, indexed by user."""
    return [
        "CREATE TABLE IF NOT EXISTS chunk_vectors (chunk_id INTEGER PRIMARY KEY,"
        f" user_id TEXT NOT NULL, embedding F32_BLOB({dimensions}) NOT NULL)",
        "CREATE INDEX IF NOT EXISTS chunk_vectors_by_user ON chunk_vectors (user_id)",
    ]


def insert_chunks(
    user_id: str,
    note_id: str,
    chunks: Sequence[str],
    vectors: Sequence[Sequence[float]] | None,
    tags: Sequence[str],
) -> list[Statement]:
    """Add the note's chunks, their keyword rows, tags and vectors (the note row exists)."""
    this_note = "FROM notes WHERE user_id = ? AND note_id = ?"
    statements = [
        keywords.corpus_row(
            user_id, keywords.NOTES, exists=(f"SELECT 1 {this_note}", (user_id, note_id))
        )
    ]
    for index, text in enumerate(chunks):
        statements.append(
            (
                "INSERT INTO chunks (note_rowid, user_id, chunk_index, text)"
                f" SELECT id, ?, ?, ? {this_note}",
                (user_id, index, text, user_id, note_id),
            )
        )
        chunk = (f"({_NOTE_CHUNKS} AND c.chunk_index = ?)", (user_id, note_id, user_id, index))
        statements += keywords.index(user_id, keywords.NOTES, chunk, text, len(tags))
    statements += [
        (
            "INSERT INTO chunk_tags (user_id, tag, chunk_id)"
            f" SELECT ?, ?, id FROM ({_NOTE_CHUNKS})",
            (user_id, tag, user_id, note_id, user_id),
        )
        for tag in tags
    ]
    for index, vector in enumerate(vectors or ()):
        statements.append(
            (
                "INSERT INTO chunk_vectors (chunk_id, user_id, embedding)"
                " SELECT c.id, ?, vector32(?) FROM chunks AS c JOIN notes AS n"
                " ON n.id = c.note_rowid WHERE n.user_id = ? AND n.note_id = ?"
                " AND c.user_id = ? AND c.chunk_index = ?",
                (user_id, pack_vector(vector), user_id, note_id, user_id, index),
            )
        )
    return statements


def delete_chunks(user_id: str, note_id: str, with_vectors: bool) -> list[Statement]:
    """Remove the note's chunks and everything indexed of them (the note row stays)."""
    chunks = (user_id, note_id, user_id)
    statements: list[Statement] = [
        *keywords.unindex(user_id, keywords.NOTES, (_NOTE_CHUNKS, chunks)),
        (f"DELETE FROM chunk_tags WHERE chunk_id IN ({_NOTE_CHUNKS})", chunks),
    ]
    if with_vectors:
        statements.append((f"DELETE FROM chunk_vectors WHERE chunk_id IN ({_NOTE_CHUNKS})", chunks))
    statements.append((f"DELETE FROM chunks WHERE id IN ({_NOTE_CHUNKS})", chunks))
    return statements
