"""The embedded state store at 100,000 notes of 384-dimension vectors: search and save.

The corpus is deterministic (a Zipf-like vocabulary of 5,000 made-up words, 8-20 words
per note, 1-3 of 20 tags per note, vectors from :class:`HashingEmbedder`), built once
through ``save_note`` and cached under the user's cache directory (minutes to build).
Each run works on a copy, so saves do not grow the cache.

Search times exclude embedding the query, and save times exclude embedding the note: the
embedder's cost is the embedder's. Queries are 3-5 words taken from random notes, so
both the keyword and the vector side have real matches.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from toolcage.host_bindings._store import HashingEmbedder, StateStore, open_store
from toolcage.policies import Principal

from .stats import ms, summarise

NOTES = 100_000
DIMENSIONS = 384
TAGS = [f"topic{i}" for i in range(20)]
USER = "bench-user"
WRITER = Principal(user_id=USER)
QUERIES = 300
RECALL_QUERIES = 30
REMOTE_NOTES = 2_000
REMOTE_QUERIES = 100
SAVES = 300
SEARCH_TARGET = 0.030
SAVE_TARGET = 0.005


def _cache_path() -> Path:
    """Keyed by the corpus's shape; a cache of an older schema is migrated in place."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "toolcage" / f"bench-state-c4-{NOTES}x{DIMENSIONS}.db"


def _rng(seed: int) -> random.Random:
    return random.Random(seed)  # noqa: S311 -- a reproducible corpus, not a secret


def _note(rng: random.Random, vocabulary: list[str]) -> tuple[str, list[str]]:
    words = [
        vocabulary[min(int(rng.paretovariate(1.0)) - 1, len(vocabulary) - 1)]
        if rng.random() < 0.5
        else rng.choice(vocabulary)
        for _ in range(rng.randint(8, 20))
    ]
    return " ".join(words), rng.sample(TAGS, rng.randint(1, 3))


def _vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(5000)]


def _build(path: Path, embedder: HashingEmbedder) -> float:
    started = time.perf_counter()
    # Each build its own partial file: two benches building at once never rename one
    # another's half-built store into the cache.
    partial = path.with_suffix(f".partial-{os.getpid()}")
    rng = _rng(13)
    vocabulary = _vocabulary(rng)
    store = open_store(f"sqlite://{partial}", base_dir=partial.parent)
    try:
        for n in range(NOTES):
            text, tags = _note(rng, vocabulary)
            vector = embedder.embed_one(text)
            store.save_note(WRITER, f"note-{n:06d}", [text], [vector], tags, embedder.model)
    finally:
        store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    partial.replace(path)
    return time.perf_counter() - started


def _searches(
    store: StateStore,
    embedder: HashingEmbedder,
    texts: list[str],
    tags: int,
    vectors: bool,
    count: int = QUERIES,
) -> list[float]:
    rng = _rng(5)
    samples = []
    for _ in range(count):
        words = rng.choice(texts).split()
        query = " ".join(rng.sample(words, min(len(words), rng.randint(3, 5))))
        vector = embedder.embed_one(query) if vectors else None
        chosen = rng.sample(TAGS, tags)
        start = time.perf_counter()
        store.search_notes(USER, query, vector, top_k=5, tags=chosen, model=embedder.model)
        samples.append(time.perf_counter() - start)
    return samples


def _recall(
    store: StateStore, copy: Path, embedder: HashingEmbedder, texts: list[str], tags: int
) -> float:
    """Share of the exact 5 nearest notes (cosine over float32, by brute force) that the
    store's vector search returns: what binary quantisation with rescoring gives up."""
    import apsw
    import sqlite_vec
    from toolcage.host_bindings._store._fusion import pack_vector

    conn = apsw.Connection(str(copy))
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    rng = _rng(23)
    found = total = 0
    try:
        for _ in range(RECALL_QUERIES):
            words = rng.choice(texts).split()
            query = " ".join(rng.sample(words, min(len(words), 4)))
            vector = embedder.embed_one(query)
            chosen = rng.sample(TAGS, tags)
            tag_filter = "".join(
                " AND v.chunk_id IN (SELECT chunk_id FROM chunk_tags WHERE tag = ?)" for _ in chosen
            )
            exact_sql = (
                "SELECT n.note_id FROM chunk_vectors AS v JOIN chunks AS c"  # noqa: S608 -- bound values
                " ON c.id = v.chunk_id JOIN notes AS n ON n.id = c.note_rowid"
                f" WHERE 1{tag_filter}"
                " ORDER BY vec_distance_cosine(vec_f32(v.vector), vec_f32(?)) LIMIT 5"
            )
            exact = {row[0] for row in conn.execute(exact_sql, (*chosen, pack_vector(vector)))}
            hits = store.search_notes(
                USER, query, vector, top_k=5, tags=chosen, fts_weight=0, model=embedder.model
            )
            found += len(exact & {hit.note_id for hit in hits})
            total += len(exact)
    finally:
        conn.close()
    return found / total if total else 1.0


def _remote(embedder: HashingEmbedder) -> list[str]:
    """The remote store against the tests' libSQL server endpoint on 127.0.0.1 (HTTP, one
    request at a time, the PyPI ``libsql`` engine): a small corpus, for the protocol's cost."""
    from tests.host_bindings.store.libsql_server import LibsqlServer

    rng = _rng(29)
    vocabulary = _vocabulary(_rng(13))
    notes = [_note(rng, vocabulary) for _ in range(REMOTE_NOTES)]
    with tempfile.TemporaryDirectory() as tmp, LibsqlServer(Path(tmp) / "remote.db") as server:
        store = open_store(server.url, base_dir=Path(tmp))
        try:
            saves = []
            for n, (text, tags) in enumerate(notes):
                vector = embedder.embed_one(text)
                start = time.perf_counter()
                store.save_note(WRITER, f"note-{n}", [text], [vector], tags, embedder.model)
                saves.append(time.perf_counter() - start)
            texts = [text for text, _ in notes[:200]]
            searches = _searches(store, embedder, texts, 1, True, count=REMOTE_QUERIES)
        finally:
            store.close()
    search_p50, search_p99 = summarise(searches)
    save_p50, save_p99 = summarise(saves)
    return [
        f"remote ({REMOTE_NOTES:,} notes) search, hybrid, 1 tag"
        f"  p50 {ms(search_p50)}  p99 {ms(search_p99)}",
        f"remote save_note (no embedding)          p50 {ms(save_p50)}  p99 {ms(save_p99)}",
    ]


def run() -> list[str]:
    embedder = HashingEmbedder(DIMENSIONS)
    cache = _cache_path()
    cache.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    if cache.exists():
        lines.append(f"corpus: {NOTES:,} notes x {DIMENSIONS} dims, cached at {cache}")
        started = time.perf_counter()
        open_store(f"sqlite://{cache}", base_dir=cache.parent).close()  # migrated once, here
        lines.append(
            f"cache opened (and migrated, if it was older) in {time.perf_counter() - started:.1f} s"
        )
    else:
        built = _build(cache, embedder)
        lines.append(f"corpus: {NOTES:,} notes x {DIMENSIONS} dims, built in {built:.0f} s")
    rng = _rng(17)
    vocabulary = _vocabulary(_rng(13))
    texts = [_note(rng, vocabulary)[0] for _ in range(200)]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "state.db"
        shutil.copyfile(cache, copy)
        store = open_store(f"sqlite://{copy}", base_dir=Path(tmp))
        try:
            _searches(store, embedder, texts, 1, True)  # warm the page cache
            for label, tags, vectors in (
                ("hybrid, 1 tag", 1, True),
                ("hybrid, 2 tags", 2, True),
                ("hybrid, no tags", 0, True),
                ("keyword only, 1 tag", 1, False),
            ):
                median, p99 = summarise(_searches(store, embedder, texts, tags, vectors))
                verdict = "meets" if median <= SEARCH_TARGET else "MISSES"
                lines.append(
                    f"search_notes {label:<20} p50 {ms(median)}  p99 {ms(p99)}"
                    + (
                        f"  ({verdict} the {SEARCH_TARGET * 1e3:.0f} ms p50 target)"
                        if tags == 1 and vectors
                        else ""
                    )
                )
            for tags in (0, 1):
                recall = _recall(store, copy, embedder, texts, tags)
                lines.append(
                    f"vector recall@5 vs exact cosine, {tags} tag(s): {recall:.0%}"
                    f" ({RECALL_QUERIES} queries)"
                )
            saves = []
            for n in range(SAVES):
                text, note_tags = _note(rng, vocabulary)
                vector = embedder.embed_one(text)
                start = time.perf_counter()
                store.save_note(
                    WRITER, f"note-new-{n}", [text], [vector], note_tags, embedder.model
                )
                saves.append(time.perf_counter() - start)
            median, p99 = summarise(saves)
            verdict = "meets" if median <= SAVE_TARGET else "MISSES"
            lines.append(
                f"save_note (no embedding)          p50 {ms(median)}  p99 {ms(p99)}"
                f"  ({verdict} the {SAVE_TARGET * 1e3:.0f} ms p50 target)"
            )
        finally:
            store.close()
    return lines + _remote(embedder)
