"""The embedded store's vector index: sign bits in sqlite-vec, rescored in float32.

Each vector is stored as float32 in ``chunk_vectors`` (exact, for rescoring) and as its
sign bits (48 bytes for 384 dimensions) three times: in ``chunk_bits``, a plain table
clustered on ``(user_id, chunk_id)``; in ``chunk_owner_vec``, a ``vec0`` table partitioned
by user; and in ``chunk_tag_vec``, a ``vec0`` table partitioned by user and tag (one row
per tag of the chunk). A search takes the ``pool`` chunks nearest by Hamming distance,
then rescores them by exact cosine distance on the float32 vectors, in a statement that
scopes by user again:

* without a tag, ``vec0`` ranks the user's partition of ``chunk_owner_vec`` below a
  distance bound (see below);
* with one tag carried by at most :data:`TAG_PARTITION_LIMIT` of the user's chunks,
  ``vec0`` ranks that tag's partition;
* otherwise the user's rows of ``chunk_bits`` (those carrying every tag, read through
  the ``chunk_tags`` index) are ranked by ``ORDER BY vec_distance_hamming(...) LIMIT``.

Measured here on 100,000 chunks of 384 dimensions of one user: a brute-force ``vec0``
KNN over float32 took 60-75 ms; the plain scan of bits 26-45 ms for any limit (SQLite's
cost per row: a bare ``count(*)`` of the rows takes 12). ``vec0`` computes distances in C
a chunk of vectors at a time (a KNN with ``k = 1`` takes 2-5 ms), but picks each chunk's
``k`` best by ``k`` passes over the chunk, so its cost grows with ``k`` (75 ms for 400).
Those passes stop when the chunk's candidates run out, and a ``distance <= bound``
constraint removes candidates before them: with a bound that lets through about twice
the pool, the KNN takes 4-8 ms. The bound is read from the distances of the user's first
:data:`SAMPLE` vectors (0.5 ms), at the first of :data:`SAMPLE_RANKS`; when fewer than
``pool`` chunks lie within it, the next rank's is tried, and last the largest distance
there is, so the result is always the ``pool`` nearest: the bound changes the cost, not
the answer, and comes from the user's own vectors only. Ranks are sized for a user of
100,000 chunks; a smaller one may take another pass (each cheaper), and one with at most
:data:`SAMPLE` takes the exact bound at once.

Binary quantisation orders coarsely: rescoring 40 candidates found 63% of the exact 5
nearest, 400 found 93% (98% within a tag), hence :func:`pool_for`.

``vec0`` stores a partition in chunks of ``chunk_size`` vectors, allocated whole (the
default 1024 takes 58 MB for 1,000 partitions of one vector each); tag partitions,
many and small, take 64; user partitions 512 (28 KB for a user's first vector; a KNN
over 100,000 vectors took about as long as with 1024, and 1.5x as long with 256). A
``chunk_owner_vec`` row's rowid is its chunk id; a ``chunk_tag_vec`` row's is ``chunk_id
* MAX_TAGS + position of the tag``, so a chunk's rows are deleted by rowid.

The tables are created when the first vector arrives, for its dimensions; a store made
before ``chunk_owner_vec`` gets it filled from ``chunk_bits`` by a migration
(:mod:`._vector_owners`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from . import _schema as schema
from ._fusion import owner_token, pack_vector, tag_token
from ._vector_owners import owner_table

MAX_TAGS = 1024
"""A note carries at most this many tags (tools allow far fewer)."""


def _partition(user_id: str, tag: str) -> str:
    """The ``chunk_tag_vec`` partition of the user's chunks with ``tag``: two digests, so
    no user id or tag can name another pair's partition."""
    return owner_token(user_id) + tag_token(tag)


TAG_PARTITION_LIMIT = 20_000
"""A tag carried by more of the user's chunks is searched by the plain scan."""

TABLES = ("chunk_owner_vec", "chunk_tag_vec", "chunk_bits", "chunk_vectors")

SAMPLE = 2_000
"""How many of the user's vectors the distance bound of an untagged search is taken from."""

SAMPLE_RANKS = (16, 64, 256)
"""The ranks in the sample whose distances are tried as the bound, for a pool of 400:
about twice the pool's share of 100,000 chunks first (scaled with the pool)."""


def pool_for(top_k: int) -> int:
    """How many chunks nearest by Hamming distance are rescored for ``top_k`` hits."""
    return max(400, 20 * top_k)


def create_tables(conn: apsw.Connection, dimensions: int) -> None:
    """The vector tables, for vectors of ``dimensions``."""
    for statement in (
        "CREATE TABLE IF NOT EXISTS chunk_vectors"
        " (chunk_id INTEGER PRIMARY KEY, vector BLOB NOT NULL)",
        "CREATE TABLE IF NOT EXISTS chunk_bits (user_id TEXT NOT NULL, chunk_id INTEGER NOT NULL,"
        " bits BLOB NOT NULL, PRIMARY KEY (user_id, chunk_id)) WITHOUT ROWID",
        "CREATE VIRTUAL TABLE IF NOT EXISTS chunk_tag_vec USING vec0"
        f" (user_tag TEXT PARTITION KEY, bits bit[{dimensions}], +chunk_id INTEGER, chunk_size=64)",
        owner_table(dimensions),
    ):
        conn.execute(statement)


def drop_tables(conn: apsw.Connection) -> None:
    """Drop every vector table."""
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def insert(
    conn: apsw.Connection,
    user_id: str,
    chunk_id: int,
    vector: Sequence[float],
    tags: Sequence[str],
) -> None:
    """Index the chunk's vector, under its user and each of its (distinct) tags."""
    blob = pack_vector(vector)
    conn.execute("INSERT INTO chunk_vectors VALUES (?, ?)", (chunk_id, blob))
    conn.execute(
        "INSERT INTO chunk_bits VALUES (?, ?, vec_quantize_binary(vec_f32(?)))",
        (user_id, chunk_id, blob),
    )
    conn.execute(
        "INSERT INTO chunk_owner_vec (rowid, owner, bits)"
        " VALUES (?, ?, vec_quantize_binary(vec_f32(?)))",
        (chunk_id, owner_token(user_id), blob),
    )
    conn.executemany(
        "INSERT INTO chunk_tag_vec (rowid, user_tag, bits, chunk_id)"
        " VALUES (?, ?, vec_quantize_binary(vec_f32(?)), ?)",
        [
            (chunk_id * MAX_TAGS + position, _partition(user_id, tag), blob, chunk_id)
            for position, tag in enumerate(tags)
        ],
    )


def delete(conn: apsw.Connection, user_id: str, chunk_id: int, tag_count: int) -> None:
    """Remove the chunk's vector (it carried ``tag_count`` tags)."""
    conn.execute("DELETE FROM chunk_vectors WHERE chunk_id = ?", (chunk_id,))
    conn.execute("DELETE FROM chunk_bits WHERE user_id = ? AND chunk_id = ?", (user_id, chunk_id))
    conn.execute("DELETE FROM chunk_owner_vec WHERE rowid = ?", (chunk_id,))
    conn.executemany(
        "DELETE FROM chunk_tag_vec WHERE rowid = ?",
        [(chunk_id * MAX_TAGS + position,) for position in range(tag_count)],
    )


_NEAREST_OF_OWNER = """
    SELECT rowid FROM chunk_owner_vec
    WHERE bits MATCH vec_bit(?) AND k = ? AND owner = ? AND distance <= ?"""

_SAMPLE_DISTANCES = """
    SELECT vec_distance_hamming(vec_bit(bits), vec_bit(?))
    FROM chunk_bits WHERE user_id = ? LIMIT ?"""

_NEAREST_ONE_TAG = """
    SELECT chunk_id FROM chunk_tag_vec
    WHERE bits MATCH vec_bit(?) AND k = ? AND user_tag = ?"""

_TAG_SIZE = """
    SELECT count(*) FROM (SELECT 1 FROM chunk_tags WHERE user_id = ? AND tag = ? LIMIT ?)"""

_NEAREST_SCAN = """
    SELECT chunk_id FROM chunk_bits WHERE user_id = ?{tags}
    ORDER BY vec_distance_hamming(vec_bit(bits), vec_bit(?)) LIMIT ?"""

_RESCORE = """
    WITH scored AS MATERIALIZED (
        SELECT chunk_id, vec_distance_cosine(vec_f32(vector), vec_f32(?)) AS d
        FROM chunk_vectors WHERE chunk_id IN ({marks}))
    SELECT s.chunk_id, c.note_rowid FROM scored AS s JOIN chunks AS c ON c.id = s.chunk_id
    WHERE c.user_id = ? AND s.d <= ? ORDER BY s.d, s.chunk_id"""
"""The candidates by exact cosine distance, scoped by user again (bound as ``query,
candidates..., user_id, max distance``). Materialised: a flattened subquery computed each
distance twice, for the filter and for the order (3.3 ms for 400 instead of 1.9)."""


def nearest(
    conn: apsw.Connection,
    user_id: str,
    query_vector: Sequence[float],
    tags: Sequence[str],
    top_k: int,
    max_distance: float,
) -> list[tuple[int, int]]:
    """``(chunk_id, note_rowid)`` of the user's nearest chunks carrying every tag, best
    first: at most :func:`pool_for` ``top_k``, each within ``max_distance`` (cosine)."""
    blob = pack_vector(query_vector)
    # The query's sign bits, once: in the scan's ORDER BY they would be made again per row.
    [(bits,)] = conn.execute("SELECT vec_quantize_binary(vec_f32(?))", (blob,))
    pool = pool_for(top_k)
    if not tags:
        candidates = _nearest_of_owner(conn, user_id, bits, pool, len(query_vector))
    else:
        candidates = _nearest_tagged(conn, user_id, bits, tags, pool)
    if not candidates:
        return []
    rescore = _RESCORE.format(marks=schema.marks(len(candidates)))
    return [
        (row[0], row[1])
        for row in conn.execute(rescore, (blob, *candidates, user_id, max_distance))
    ]


def _nearest_of_owner(
    conn: apsw.Connection, user_id: str, bits: bytes, pool: int, dimensions: int
) -> list[int]:
    """The user's ``pool`` chunks nearest ``bits`` by Hamming distance, from their
    partition of ``chunk_owner_vec`` under a bound taken from a sample (see above)."""
    sample = sorted(
        float(row[0]) for row in conn.execute(_SAMPLE_DISTANCES, (bits, user_id, SAMPLE))
    )
    if not sample:
        return []
    if len(sample) < SAMPLE:  # every vector of the user: the pool's bound is exact
        bounds = [sample[min(pool, len(sample)) - 1]]
    else:
        scale = pool / 400
        bounds = [sample[min(SAMPLE, round(rank * scale)) - 1] for rank in SAMPLE_RANKS]
        bounds.append(float(dimensions))  # no vector is farther: the plain KNN
    owner = owner_token(user_id)
    found: list[int] = []
    for bound in bounds:
        found = [row[0] for row in conn.execute(_NEAREST_OF_OWNER, (bits, pool, owner, bound))]
        if len(found) >= pool:
            break
    return found


def _nearest_tagged(
    conn: apsw.Connection, user_id: str, bits: bytes, tags: Sequence[str], pool: int
) -> list[int]:
    """The user's ``pool`` chunks carrying every tag nearest ``bits`` by Hamming distance."""
    if len(tags) == 1 and _tag_size(conn, user_id, tags[0]) <= TAG_PARTITION_LIMIT:
        found = conn.execute(_NEAREST_ONE_TAG, (bits, pool, _partition(user_id, tags[0])))
    else:
        sql = _NEAREST_SCAN.format(tags=schema.tag_filter("chunk_id", len(tags)))
        args: list[Any] = [user_id]
        for tag in tags:
            args += [user_id, tag]
        found = conn.execute(sql, (*args, bits, pool))
    return [row[0] for row in found]


def _tag_size(conn: apsw.Connection, user_id: str, tag: str) -> int:
    """How many of the user's chunks carry ``tag``, counted up to one past the limit."""
    row = conn.execute(_TAG_SIZE, (user_id, tag, TAG_PARTITION_LIMIT + 1)).fetchone()
    return int(row[0]) if row else 0
