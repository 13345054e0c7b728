"""What both backends share for search: the FTS5 query, the filter tokens, the rank fusion.

Keyword search runs on one FTS5 table per store with three columns: ``text`` (the chunk),
``owner`` (one token naming the user) and ``tagset`` (one token per tag). A user's query
``tea lemon`` with tag ``drinks`` becomes::

    owner:"u3f1c…" AND tagset:"t9a0b…" AND text:("tea" OR "lemon")

so FTS5 itself filters by user and tags, and ranks with ``bm25`` weighted on ``text``
only. The tokens are digests, so any user id or tag (punctuation, any script) is one
token. The statements that read the table still join ``chunks`` on ``user_id``: the
tokens narrow, the SQL scopes.

Ranking costs a lookup per matching chunk, and a word found in most chunks matches most
of them while its inverse document frequency (what bm25 weighs it by) is near zero; so,
as Lucene's common-terms query does, only the query's rarest words are kept, up to
:data:`COMMON_TERMS_BUDGET` postings (document frequencies come from an ``fts5vocab``
table and are cached for minutes by :class:`TermFrequencies`).

The two result lists are fused by weighted reciprocal rank (Cormack et al., 2009):
a note's score is ``vector_weight / (K + vector_rank) + fts_weight / (K + keyword_rank)``,
each term present only when the note is in that list. Ranks, unlike raw cosine and bm25
values, are on one scale, so the weights mean the same whatever the model or corpus.
"""

from __future__ import annotations

import hashlib
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

RRF_K = 60
"""The reciprocal-rank constant: larger flattens the difference between neighbouring ranks."""

MAX_QUERY_WORDS = 64
"""Keyword search uses at most this many distinct words of the query."""

COMMON_TERMS_BUDGET = 5_000
"""Keyword search keeps the query's rarest words whose document frequencies add up to at
most this (and always the rarest one), so bm25 ranks a bounded number of chunks."""

_WORD = re.compile(r"[^\W_]+")


def owner_token(user_id: str) -> str:
    """The FTS token that stands for ``user_id``."""
    return "u" + hashlib.blake2b(user_id.encode(), digest_size=12).hexdigest()


def tag_token(tag: str) -> str:
    """The FTS token that stands for ``tag``."""
    return "t" + hashlib.blake2b(tag.encode(), digest_size=12).hexdigest()


def tagset(tags: Iterable[str]) -> str:
    """The ``tagset`` column's text for a chunk with ``tags``."""
    return " ".join(tag_token(tag) for tag in tags)


def query_words(query_text: str) -> list[str]:
    """The distinct words of a query, lowercased, at most :data:`MAX_QUERY_WORDS`."""
    return list(dict.fromkeys(_WORD.findall(query_text.lower())))[:MAX_QUERY_WORDS]


def rarest_words(
    words: Sequence[str], frequencies: Mapping[str, int], budget: int = COMMON_TERMS_BUDGET
) -> list[str]:
    """The rarest ``words`` whose document frequencies add up to at most ``budget`` (the
    rarest one always), in query order."""
    kept: set[str] = set()
    total = 0
    for word in sorted(words, key=lambda w: frequencies.get(w, 0)):
        frequency = frequencies.get(word, 0)
        if kept and total + frequency > budget:
            break
        kept.add(word)
        total += frequency
    return [word for word in words if word in kept]


def fts_query(user_id: str, words: Sequence[str], tags: Sequence[str]) -> str | None:
    """The FTS5 MATCH expression for the user's words and tags, or ``None`` for no words."""
    if not words:
        return None
    # Every word is quoted, so FTS5 operators typed by a user are just words.
    text = " OR ".join(f'"{word}"' for word in words)
    filters = [f'owner:"{owner_token(user_id)}"']
    filters += [f'tagset:"{tag_token(tag)}"' for tag in tags]
    return " AND ".join([*filters, f"text:({text})"])


class TermFrequencies:
    """How many chunks contain each word (FTS5's ``fts5vocab``), fetched by ``fetch`` and
    kept for ``ttl`` seconds: the cutoff needs an estimate, not an exact count."""

    def __init__(
        self,
        fetch: Callable[[Sequence[str]], Mapping[str, int]],
        *,
        ttl: float = 300.0,
        max_entries: int = 65_536,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch = fetch
        self._ttl = ttl
        self._max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._known: dict[str, tuple[int, float]] = {}

    def get(self, words: Sequence[str]) -> dict[str, int]:
        """The document frequency of each word (0 for a word no chunk contains)."""
        now = self._clock()
        with self._lock:
            found = {w: v[0] for w in words if (v := self._known.get(w)) and v[1] > now}
        missing = [word for word in words if word not in found]
        if missing:
            fetched = self._fetch(missing)
            with self._lock:
                if len(self._known) + len(missing) > self._max_entries:
                    self._known.clear()
                for word in missing:
                    found[word] = fetched.get(word, 0)
                    self._known[word] = (found[word], now + self._ttl)
        return found


def vocabulary_query(count: int) -> str:
    """The statement that reads ``count`` words' document frequencies."""
    return f"SELECT term, doc FROM chunks_vocab WHERE term IN ({', '.join('?' * count)})"


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
