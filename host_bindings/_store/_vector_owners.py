"""The embedded store's partition of each user's vectors (``chunk_owner_vec``): its table,
and the migration that fills it in a store made before it.

Kept apart from :mod:`._sqlite_vectors`, which searches it, because the migrations
(:mod:`._schema`) need the table and the search needs the schema's SQL helpers.
"""

from __future__ import annotations

from .._backends._migrations import Run, Statement
from ._fusion import owner_token

OWNER_CHUNK_SIZE = 512
"""Vectors per ``vec0`` chunk of a user's partition (allocated whole: 28 KB for the
user's first vector of 384 dimensions)."""


def owner_table(dimensions: int) -> str:
    """``chunk_owner_vec`` for sign bits of ``dimensions``: rowid the chunk id, one
    partition per user, keyed by :func:`~._fusion.owner_token`."""
    return (
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_owner_vec USING vec0 (owner TEXT PARTITION KEY,"
        f" bits bit[{dimensions}], chunk_size={OWNER_CHUNK_SIZE})"
    )


def index_by_owner(run: Run) -> list[Statement]:
    """Statements making ``chunk_owner_vec`` and filling it from ``chunk_bits``, for a
    migration; none for a store without vectors, or a remote one (no ``chunk_bits``)."""
    if not run("SELECT 1 FROM sqlite_master WHERE name = 'chunk_bits'", ()):
        return []
    found = run("SELECT value FROM store_meta WHERE key = 'dimensions'", ())
    if not found:
        return []
    statements: list[Statement] = [(owner_table(int(found[0][0])), ())]
    for (user_id,) in run("SELECT DISTINCT user_id FROM chunk_bits", ()):
        statements.append(
            (
                "INSERT INTO chunk_owner_vec (rowid, owner, bits)"
                " SELECT chunk_id, ?, vec_bit(bits) FROM chunk_bits WHERE user_id = ?",
                (owner_token(str(user_id)), user_id),
            )
        )
    return statements
