"""A deterministic embedder with no model: a random projection of the bag of words.

Each term of a text (its words, symbols and characters of scripts without spaces, folded
as the keyword index folds them: :func:`._terms.terms`) is given a fixed pseudo-random
unit direction, seeded by a hash of the term; a text's vector is the normalised sum of
its terms' directions. Texts that share words point the same way, and the cosine of two
texts approximates the overlap of their words (the Johnson-Lindenstrauss property of
random projections). It knows nothing of meaning, so it serves tests and benchmarks, and
stores that want vectors without any model; ``synonyms`` maps words onto one direction so
a test can stage a match "by meaning".

A word's direction costs about 0.2 ms to compute (a seeded Gaussian per dimension), about
thirteen times what summing it costs, so directions are cached: as ``array('d')`` (the
same doubles, 8 bytes each, where a tuple of floats takes 32), least recently used dropped
first once the cache holds ``cache_bytes`` (:data:`CACHE_BYTES`), counted by its own
accounting of each entry's size. A long session's vocabulary therefore costs a fixed
amount of memory, not one entry per word it ever saw.
"""

from __future__ import annotations

import collections
import hashlib
import math
import random
import sys
import threading
from array import array
from collections.abc import Callable, Mapping, Sequence

from ._terms import fold, terms

CACHE_BYTES = 16 * 1024 * 1024
"""What the word directions of one embedder may hold by default: about 5,000 words of
384 dimensions."""


class HashingEmbedder:
    """Vectors of ``dimensions`` floats from hashed words::

    embedder = HashingEmbedder(384)
    [vector] = embedder.embed(["tea with lemon"], deadline=time.monotonic() + 1)
    """

    def __init__(
        self,
        dimensions: int = 384,
        *,
        synonyms: Mapping[str, str] | None = None,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be at least 1")
        self._dimensions = dimensions
        self._synonyms = {fold(k): fold(v) for k, v in (synonyms or {}).items()}
        self.directions = DirectionCache(self._make_direction, cache_bytes)
        """The cached word directions."""

    @property
    def model(self) -> str:
        """``hash-{dimensions}``, plus a digest of the synonyms when there are any."""
        if not self._synonyms:
            return f"hash-{self._dimensions}"
        digest = hashlib.blake2b(repr(sorted(self._synonyms.items())).encode(), digest_size=4)
        return f"hash-{self._dimensions}-{digest.hexdigest()}"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str], deadline: float) -> list[list[float]]:
        """One unit vector per text (all zeros for a blank text); ``deadline`` is
        not consulted: the work is bounded by the texts' length."""
        return [self.embed_one(text) for text in texts]

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        directions = [self.directions.get(self._synonyms.get(word, word)) for word in terms(text)]
        if not directions:
            return [0.0] * self._dimensions
        # Summed a dimension at a time, in the order of the words: what adding the vectors
        # one by one gives (Python 3.12's sum of floats also compensates rounding, which
        # can change the last bits), in half the time.
        total = [float(sum(column)) for column in zip(*directions, strict=True)]
        norm = math.sqrt(sum(x * x for x in total))
        if norm == 0.0:
            return total
        return [x / norm for x in total]

    def _make_direction(self, word: str) -> array[float]:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        rng = random.Random(seed)  # noqa: S311 -- a fixed projection, not a secret
        values = [rng.gauss(0.0, 1.0) for _ in range(self._dimensions)]
        norm = math.sqrt(sum(x * x for x in values))
        return array("d", [x / norm for x in values])


class DirectionCache:
    """Word directions made by ``make``, at most ``max_bytes`` of them (by
    :func:`entry_bytes`), the least recently used dropped first. Safe to share between
    threads: a direction is made outside the lock, so two threads may both make one."""

    def __init__(self, make: Callable[[str], array[float]], max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError("cache_bytes must be 0 or more")
        self.max_bytes = max_bytes
        self.bytes = 0
        """What the cached entries take, by :func:`entry_bytes`."""
        self._make = make
        self._entries: collections.OrderedDict[str, array[float]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, word: str) -> array[float]:
        """The direction of ``word``, made and cached when it is not."""
        with self._lock:
            found = self._entries.get(word)
            if found is not None:
                self._entries.move_to_end(word)
                return found
        made = self._make(word)
        cost = entry_bytes(word, made)
        if cost > self.max_bytes:
            return made
        with self._lock:
            if word not in self._entries:
                self._entries[word] = made
                self.bytes += cost
                while self.bytes > self.max_bytes:
                    old, vector = self._entries.popitem(last=False)
                    self.bytes -= entry_bytes(old, vector)
        return made


def entry_bytes(word: str, vector: array[float]) -> int:
    """The memory one cache entry holds: the word, the vector and the slot of its key."""
    return sys.getsizeof(word) + sys.getsizeof(vector) + _SLOT_BYTES


_SLOT_BYTES = 100
"""An ordered dictionary's slot and link for one key, roughly (CPython keeps ~100 bytes)."""
