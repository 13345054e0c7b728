"""The statements of the remote store's writes, and its vector searches.

Each write is one batch, so each statement finds its rows by ``(user_id, note_id)``
(``INSERT … SELECT``, ``… WHERE id IN (the note's chunks)``) instead of by ids read back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._fusion import owner_token, pack_vector, tagset

Statement = tuple[str, Sequence[Any]]
"""SQL and its arguments."""

_NOTE_CHUNKS = """
    SELECT c.id FROM chunks AS c JOIN notes AS n ON n.id = c.note_rowid
    WHERE n.user_id = ? AND n.note_id = ? AND c.user_id = ?"""

NEAREST_INDEXED = """
    SELECT chunk_id, note_rowid FROM (
        SELECT v.chunk_id, c.note_rowid, vector_distance_cos(v.embedding, vector32(?)) AS d
        FROM vector_top_k('chunk_vectors_idx', vector32(?), ?) AS t
        JOIN chunk_vectors AS v ON v.rowid = t.id JOIN chunks AS c ON c.id = v.chunk_id
        WHERE v.user_id = ? AND c.user_id = ?)
    WHERE d <= ? ORDER BY d, chunk_id"""

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
    """The vector table for ``dimensions`` and libSQL's index on it (cosine)."""
    return [
        "CREATE TABLE IF NOT EXISTS chunk_vectors (chunk_id INTEGER PRIMARY KEY,"
        f" user_id TEXT NOT NULL, embedding F32_BLOB({dimensions}) NOT NULL)",
        "CREATE INDEX IF NOT EXISTS chunk_vectors_idx"
        " ON chunk_vectors (libsql_vector_idx(embedding, 'metric=cosine'))",
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
    statements: list[Statement] = [
        (
            "INSERT INTO chunks (note_rowid, user_id, chunk_index, text)"
            f" SELECT id, ?, ?, ? {this_note}",
            (user_id, index, text, user_id, note_id),
        )
        for index, text in enumerate(chunks)
    ]
    statements.append(
        (
            f"INSERT INTO chunks_fts (rowid, text, owner, tagset) SELECT c.id, c.text, ?, ?"
            f" FROM ({_NOTE_CHUNKS}) AS k JOIN chunks AS c ON c.id = k.id",
            (owner_token(user_id), tagset(tags), user_id, note_id, user_id),
        )
    )
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
        (f"DELETE FROM chunks_fts WHERE rowid IN ({_NOTE_CHUNKS})", chunks),
        (f"DELETE FROM chunk_tags WHERE chunk_id IN ({_NOTE_CHUNKS})", chunks),
    ]
    if with_vectors:
        statements.append((f"DELETE FROM chunk_vectors WHERE chunk_id IN ({_NOTE_CHUNKS})", chunks))
    statements.append((f"DELETE FROM chunks WHERE id IN ({_NOTE_CHUNKS})", chunks))
    return statements
