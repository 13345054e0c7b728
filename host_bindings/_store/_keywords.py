"""Keyword search on each user's own statistics: an inverted index in plain tables, BM25.

Every user's notes are one *corpus* and their conversation events another
(``keyword_corpora``, one row per user and kind, holding its number of documents and the
sum of their lengths). A document -- a note's chunk, an event -- is indexed as its terms
(:func:`._terms.terms`: its words, symbols, and the characters of scripts written without
spaces, folded as a query's are): one ``keyword_postings`` row per distinct term, keyed
``(corpus, term, doc)`` with how often the term occurs and the document's length, and one
``keyword_terms`` row per term of the corpus with how many of its documents hold it.

A search reads only rows under its own corpus id: the document frequencies that decide
which query words are searched, and every statistic BM25 weighs them by (the number of
documents, their average length, each word's document frequency) are the user's, never
the store's. So a user's results, their order, scores and number, are the same whatever
anyone else stores; a shared full-text index (FTS5's ``bm25`` and ``fts5vocab`` read
whole-table counts) would let one user's ranking reveal which words other users' rows
hold. It also bounds the work by the user's own postings: a key-range read per query
word, however many rows other users keep.

Ranking is FTS5's ``bm25`` formula (k1 = 1.2, b = 0.75, ``idf = ln((N - n + 0.5) / (n +
0.5))``, at least 1e-6) on those statistics, with a document's length counted as FTS5
counted the row it kept for it -- the text's words, one token naming the owner, one per
tag -- so a store holding only one user's rows ranks them exactly as the FTS5 index of
earlier versions did (``tests/host_bindings/store/test_keyword_recall.py`` holds its
answers). A blank text is not indexed. As Lucene's common-terms query does, a
notes search keeps only the query's rarest words whose document frequencies add up to
:data:`COMMON_TERMS_BUDGET` (and always the rarest one): a word in most of the user's
notes would cost a posting per note and weigh almost nothing.

Writes are statement lists both backends run in one transaction (the remote store as one
batch, without reading ids back): a document is named by SQL that yields its id.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from .._backends._migrations import Run as Run
from .._backends._migrations import Statement as Statement
from ._terms import terms

NOTES = "notes"
"""The corpus of a user's notes: its documents are ``chunks`` rows."""
EVENTS = "events"
"""The corpus of a user's conversation events: its documents are ``events`` rows."""

MAX_QUERY_TERMS = 64
"""Keyword search uses at most this many distinct terms of the query."""
COMMON_TERMS_BUDGET = 5_000
"""A notes search keeps the query's rarest words whose document frequencies add up to at
most this (and always the rarest one)."""
K1 = 1.2
"""BM25's term-frequency saturation (FTS5's)."""
B = 0.75
"""BM25's length normalisation (FTS5's)."""

_CORPUS = "(SELECT id FROM keyword_corpora WHERE user_id = ? AND kind = ?)"
_BULK_ROWS = 200


def query_terms(query_text: str) -> list[str]:
    """The distinct terms of a query, at most :data:`MAX_QUERY_TERMS`."""
    return list(dict.fromkeys(terms(query_text)))[:MAX_QUERY_TERMS]


def rarest_words(words: Sequence[str], frequencies: dict[str, int], budget: int) -> list[str]:
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


def document_length(found: Sequence[str], tags: int) -> int:
    """BM25's length of a document of words ``found`` with ``tags`` tags (see above)."""
    return len(found) + 1 + tags


def idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency of a word in ``frequency`` of ``documents``."""
    return max(math.log((documents - frequency + 0.5) / (frequency + 0.5)), 1e-6)


# -- writes ------------------------------------------------------------------------------


def corpus_row(user_id: str, kind: str, *, exists: Statement | None = None) -> Statement:
    """The statement that gives the user a corpus of ``kind`` if they have none (only when
    ``exists`` -- SQL after ``WHERE EXISTS`` -- finds a row); run before :func:`index`."""
    if exists is None:
        return (
            "INSERT OR IGNORE INTO keyword_corpora (user_id, kind) VALUES (?, ?)",
            (user_id, kind),
        )
    sql, args = exists
    return (
        f"INSERT OR IGNORE INTO keyword_corpora (user_id, kind) SELECT ?, ? WHERE EXISTS ({sql})",
        (user_id, kind, *args),
    )


def index(user_id: str, kind: str, doc: Statement, text: str, tags: int = 0) -> list[Statement]:
    """Statements indexing ``text`` (of a chunk with ``tags`` tags) as the document whose
    id ``doc``'s SQL yields; they change nothing when it yields ``NULL`` (a replace of a
    note that is not there), and there are none for a blank text. Their rows (of
    ``WITHOUT ROWID`` tables, and an update) leave ``last_insert_rowid()`` alone, so
    ``doc`` may be that of the document's own insert."""
    found = terms(text)
    if not found:
        return []
    doc_sql, doc_args = doc
    owner = (user_id, kind)
    counts = json.dumps(Counter(found))
    length = document_length(found, tags)
    this = f"c.user_id = ? AND c.kind = ? AND {doc_sql} IS NOT NULL"
    return [
        (
            "INSERT INTO keyword_postings (corpus, term, doc, hits, length)"
            f" SELECT c.id, j.key, {doc_sql}, j.value, ?"
            f" FROM keyword_corpora AS c, json_each(?) AS j WHERE {this}",
            (*doc_args, length, counts, *owner, *doc_args),
        ),
        (
            "INSERT INTO keyword_terms (corpus, term, documents)"
            f" SELECT c.id, j.key, 1 FROM keyword_corpora AS c, json_each(?) AS j WHERE {this}"
            " ON CONFLICT (corpus, term) DO UPDATE SET documents = documents + 1",
            (counts, *owner, *doc_args),
        ),
        (
            "UPDATE keyword_corpora AS c SET documents = documents + 1, length = length + ?"
            f" WHERE {this}",
            (length, *owner, *doc_args),
        ),
    ]


def unindex(user_id: str, kind: str, docs: Statement) -> list[Statement]:
    """Statements removing the documents whose ids ``docs``'s SQL selects, and their words
    from the corpus's counts; run before the documents' own rows go."""
    docs_sql, docs_args = docs
    owner = (user_id, kind)
    # By document: without statistics the planner would rather walk the corpus's postings.
    postings = (
        f"FROM keyword_postings INDEXED BY keyword_postings_by_doc"
        f" WHERE corpus = {_CORPUS} AND doc IN ({docs_sql})"
    )
    return [
        (
            "UPDATE keyword_terms SET documents = documents - (SELECT count(*)"
            " FROM keyword_postings AS p WHERE p.corpus = keyword_terms.corpus"
            f" AND p.term = keyword_terms.term AND p.doc IN ({docs_sql}))"
            f" WHERE corpus = {_CORPUS} AND term IN (SELECT term {postings})",
            (*docs_args, *owner, *owner, *docs_args),
        ),
        (
            f"DELETE FROM keyword_terms WHERE corpus = {_CORPUS} AND documents <= 0"
            f" AND term IN (SELECT term {postings})",
            (*owner, *owner, *docs_args),
        ),
        (
            "UPDATE keyword_corpora SET documents = documents - gone.n, length = length - gone.w"
            " FROM (SELECT count(*) AS n, coalesce(sum(length), 0) AS w"
            f" FROM (SELECT doc, max(length) AS length {postings} GROUP BY doc)) AS gone"
            " WHERE keyword_corpora.user_id = ? AND keyword_corpora.kind = ?",
            (*owner, *docs_args, *owner),
        ),
        (f"DELETE {postings}", (*owner, *docs_args)),
    ]


# -- search ------------------------------------------------------------------------------

_STATISTICS = """
    SELECT c.id, c.documents, c.length, t.term, t.documents
    FROM keyword_corpora AS c
    LEFT JOIN keyword_terms AS t ON t.corpus = c.id AND t.term IN ({marks})
    WHERE c.user_id = ? AND c.kind = ?"""

_RANKED = """
    SELECT p.doc, sum(j.value * p.hits / (p.hits + ? + ? * p.length)) AS score
    FROM json_each(?) AS j
    CROSS JOIN keyword_postings AS p ON p.corpus = ? AND p.term = j.key{tags}
    GROUP BY p.doc ORDER BY score DESC, p.doc LIMIT ?"""

"""The corpus's documents holding the weighted words, by BM25 (the ``CROSS JOIN`` keeps the
words outermost: each is one key range of postings)."""

_TAGGED = (
    " AND EXISTS (SELECT 1 FROM chunk_tags WHERE user_id = ? AND tag = ? AND chunk_id = p.doc)"
)

_GROUPED = {
    NOTES: """
    SELECT m.doc, c.note_rowid FROM ({ranked}) AS m JOIN chunks AS c ON c.id = m.doc
    WHERE c.user_id = ? ORDER BY m.score DESC, m.doc""",
    EVENTS: """
    SELECT m.doc, e.id FROM ({ranked}) AS m JOIN events AS e ON e.id = m.doc
    WHERE e.user_id = ? ORDER BY m.score DESC, m.doc""",
}
"""The ranked documents with the group each belongs to (a chunk's note; an event is its
own), scoped by user again: the corpus narrows, the SQL scopes."""


def search(
    run: Run,
    user_id: str,
    kind: str,
    query_text: str,
    *,
    limit: int,
    tags: Sequence[str] = (),
    budget: int | None = None,
) -> list[tuple[int, int]]:
    """``(doc, group)`` of the user's ``limit`` documents of ``kind`` best matching the
    query's words (with every tag in ``tags``, for notes), best first; words are chosen
    within ``budget`` when given."""
    wanted = query_terms(query_text)
    if not wanted:
        return []
    found = run(_STATISTICS.format(marks=", ".join("?" * len(wanted))), (*wanted, user_id, kind))
    if not found or not found[0][1]:
        return []
    corpus, documents, total = int(found[0][0]), int(found[0][1]), int(found[0][2])
    frequencies = {str(row[3]): int(row[4]) for row in found if row[3] is not None}
    kept = [word for word in wanted if word in frequencies]  # others match nothing
    if budget is not None:
        kept = rarest_words(kept, frequencies, budget)
    if not kept:
        return []
    weights = {word: idf(documents, frequencies[word]) * (K1 + 1) for word in kept}
    tag_args: list[Any] = []
    for tag in tags:
        tag_args += [user_id, tag]
    ranked = _RANKED.format(tags=_TAGGED * len(tags))
    args = (K1 * (1 - B), K1 * B * documents / total, json.dumps(weights), corpus, *tag_args)
    rows = run(_GROUPED[kind].format(ranked=ranked), (*args, limit, user_id))
    return [(int(row[0]), int(row[1])) for row in rows]


# -- the index of every stored document, made by a migration ---------------------------------

_SOURCES = (
    (NOTES, "chunks", "(SELECT count(*) FROM chunk_tags AS t WHERE t.chunk_id = d.id)"),
    (EVENTS, "events", "0"),
)
"""Each corpus's table, and SQL counting a document's tags."""

_SNAPSHOT_GUARD = """
    INSERT INTO model_guard (ok) SELECT
        (SELECT count(*) FROM chunks) = ? AND (SELECT coalesce(max(id), 0) FROM chunks) = ?
        AND (SELECT count(*) FROM events) = ? AND (SELECT coalesce(max(id), 0) FROM events) = ?"""
"""Fails (``model_guard`` holds only ``ok = 1``), rolling the migration back, when chunks
or events were added since their texts were read: a remote migration reads before its
batch runs, and is tried again."""


def backfill(run: Run) -> list[Statement]:
    """Statements indexing every stored chunk and event, for a migration that leaves the
    keyword tables empty; reads the texts with ``run``."""
    present = {
        str(row[0])
        for row in run(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('chunks', 'events')",
            (),
        )
    }
    corpora: dict[tuple[str, str], list[int]] = {}  # (user, kind) -> [id, documents, length]
    frequencies: Counter[tuple[int, str]] = Counter()
    postings: list[tuple[Any, ...]] = []
    seen: list[int] = []
    for kind, table, tags in _SOURCES:
        read = f"SELECT d.id, d.user_id, d.text, {tags} FROM {table} AS d ORDER BY d.id"
        rows = run(read, ()) if table in present else []
        seen += [len(rows), max((int(row[0]) for row in rows), default=0)]
        for doc, user_id, text, tag_count in rows:
            found = terms(str(text))
            if not found:
                continue
            length = document_length(found, int(tag_count))
            corpus = corpora.setdefault((str(user_id), kind), [len(corpora) + 1, 0, 0])
            corpus[1] += 1
            corpus[2] += length
            for term, hits in Counter(found).items():
                postings.append((corpus[0], term, int(doc), hits, length))
                frequencies[(corpus[0], term)] += 1
    return [
        (_SNAPSHOT_GUARD, seen),
        ("DELETE FROM model_guard", ()),
        *_bulk(
            "keyword_corpora (id, user_id, kind, documents, length)",
            [(c[0], user, kind, c[1], c[2]) for (user, kind), c in corpora.items()],
        ),
        *_bulk(
            "keyword_terms (corpus, term, documents)", [(*k, n) for k, n in frequencies.items()]
        ),
        *_bulk("keyword_postings (corpus, term, doc, hits, length)", postings),
    ]


def _bulk(table: str, rows: Sequence[tuple[Any, ...]]) -> list[Statement]:
    """Multi-row inserts of ``rows`` into ``table`` (``name (columns)``)."""
    statements: list[Statement] = []
    for start in range(0, len(rows), _BULK_ROWS):
        part = rows[start : start + _BULK_ROWS]
        values = ", ".join(["(" + ", ".join("?" * len(part[0])) + ")"] * len(part))
        statements.append(
            (f"INSERT INTO {table} VALUES {values}", [v for row in part for v in row])
        )
    return statements
