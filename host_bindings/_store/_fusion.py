"""What both backends share for search: the fusion of the vector and keyword rankings.

Each side ranks only the user's own rows: the vector side the user's vectors, the keyword
side the user's keyword index (:mod:`._keywords`), each with ids of the user's chunks (or
events) best first. The two result lists are fused by weighted reciprocal rank (Cormack
et al., 2009): a note's score is ``vector_weight / (K + vector_rank) + fts_weight / (K +
keyword_rank)``, each term present only when the note is in that list. Ranks, unlike raw
cosine and BM25 values, are on one scale, so the weights mean the same whatever the model
or corpus. Both lists are cut at sizes that depend only on ``top_k``, so what another user
stores changes neither a rank nor a score.

The embedded store partitions tagged vectors by digests of user and tag
(:func:`owner_token`, :func:`tag_token`), so any user id or tag is one fixed-size key.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass

RRF_K = 60
"""The reciprocal-rank constant: larger flattens the difference between neighbouring ranks."""


def owner_token(user_id: str) -> str:
    """The key that stands for ``user_id``."""
    return "u" + hashlib.blake2b(user_id.encode(), digest_size=12).hexdigest()


def tag_token(tag: str) -> str:
    """The key that stands for ``tag``."""
    return "t" + hashlib.blake2b(tag.encode(), digest_size=12).hexdigest()


def pool_size(top_k: int) -> int:
    """How many keyword matches (and, on the remote store, vector neighbours) are ranked
    before fusion: several times ``top_k``, so that a note found by only one side still has
    a rank there."""
    return max(4 * top_k, 40)


def max_distance(min_similarity: float | None) -> float:
    """The cosine distance (``1 - similarity``, 0 to 2) a vector match may have at most."""
    return 2.0 if min_similarity is None else 1.0 - min_similarity


def pack_vector(vector: Sequence[float]) -> bytes:
    """``vector`` as little-endian float32, the layout sqlite-vec and libSQL read."""
    return struct.pack(f"<{len(vector)}f", *vector)


@dataclass(slots=True)
class Fused:
    """A note's standing after fusion."""

    note_rowid: int
    best_chunk: int
    """The chunk id that ranked best for this note (vector side first)."""
    score: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None


def fuse(
    vector_chunks: Sequence[tuple[int, int]],
    keyword_chunks: Sequence[tuple[int, int]],
    *,
    vector_weight: float,
    fts_weight: float,
    top_k: int,
) -> list[Fused]:
    """The ``top_k`` notes by weighted reciprocal rank.

    Each list is ``(chunk_id, note_rowid)`` pairs, best first; a note's rank in a list is
    the rank of its best chunk there, counted over notes (1-based).
    """
    notes: dict[int, Fused] = {}
    for chunks, weight, side in (
        (vector_chunks, vector_weight, "vector"),
        (keyword_chunks, fts_weight, "keyword"),
    ):
        rank = 0
        seen: set[int] = set()
        for chunk_id, note_rowid in chunks:
            if note_rowid in seen:
                continue
            seen.add(note_rowid)
            rank += 1
            entry = notes.setdefault(note_rowid, Fused(note_rowid, chunk_id))
            entry.score += weight / (RRF_K + rank)
            if side == "vector":
                entry.vector_rank = rank
            else:
                entry.keyword_rank = rank
    ordered = sorted(notes.values(), key=lambda f: (-f.score, f.note_rowid))
    return ordered[:top_k]
