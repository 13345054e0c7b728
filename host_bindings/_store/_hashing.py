"""A deterministic embedder with no model: a random projection of the bag of words.

Each word (lowercased run of letters and digits) is given a fixed pseudo-random unit
direction, seeded by a hash of the word; a text's vector is the normalised sum of its
words' directions. Texts that share words point the same way, and the cosine of two texts
approximates the overlap of their words (the Johnson-Lindenstrauss property of random
projections). It knows nothing of meaning, so it serves tests and benchmarks, and stores
that want vectors without any model; ``synonyms`` maps words onto one direction so a test
can stage a match "by meaning".
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
import re
from collections.abc import Mapping, Sequence

_WORD = re.compile(r"[^\W_]+")


class HashingEmbedder:
    """Vectors of ``dimensions`` floats from hashed words::

    embedder = HashingEmbedder(384)
    [vector] = embedder.embed(["tea with lemon"], deadline=time.monotonic() + 1)
    """

    def __init__(self, dimensions: int = 384, *, synonyms: Mapping[str, str] | None = None) -> None:
        if dimensions < 1:
            raise ValueError("dimensions must be at least 1")
        self._dimensions = dimensions
        self._synonyms = {k.lower(): v.lower() for k, v in (synonyms or {}).items()}
        self._direction = functools.lru_cache(maxsize=65_536)(self._make_direction)

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
        """One unit vector per text (all zeros for a text without words); ``deadline`` is
        not consulted: the work is bounded by the texts' length."""
        return [self.embed_one(text) for text in texts]

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        total = [0.0] * self._dimensions
        for word in _WORD.findall(text.lower()):
            direction = self._direction(self._synonyms.get(word, word))
            total = [a + b for a, b in zip(total, direction, strict=True)]
        norm = math.sqrt(sum(x * x for x in total))
        if norm == 0.0:
            return total
        return [x / norm for x in total]

    def _make_direction(self, word: str) -> tuple[float, ...]:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        rng = random.Random(seed)  # noqa: S311 -- a fixed projection, not a secret
        values = [rng.gauss(0.0, 1.0) for _ in range(self._dimensions)]
        norm = math.sqrt(sum(x * x for x in values))
        return tuple(x / norm for x in values)
