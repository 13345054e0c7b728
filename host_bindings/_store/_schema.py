"""The store's tables, and the migrations that build them, versioned in the database.

``store_meta`` holds ``schema_version`` (the number of migrations applied) and, once a
vector is stored, ``embedding_model`` and ``dimensions``. A backend opens the database,
creates ``store_meta`` if it is missing, and applies, in one write transaction, every
migration past the recorded version; several processes opening one database at once
serialise on that transaction, and the loser finds the work done.

Vector tables depend on the backend and on the embedder's dimensions, so each backend
creates its own when the first vector arrives (see ``vector_tables`` in each backend).

Rows of every table carry ``user_id`` (``chunks`` and ``chunk_tags`` copy it from their
note), so each statement can scope by user without a join.
"""

from __future__ import annotations

NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
"""The backend's clock, as the ISO 8601 UTC text every timestamp is stored as."""

META_TABLE = "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: notes, their chunks and tags, keyword index, scratchpads.
    (
        """CREATE TABLE notes (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            note_id TEXT NOT NULL,
            tags TEXT NOT NULL,
            model TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (user_id, note_id)
        )""",
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            note_rowid INTEGER NOT NULL REFERENCES notes (id),
            user_id TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            text TEXT NOT NULL
        )""",
        "CREATE INDEX chunks_by_note ON chunks (note_rowid, chunk_index)",
        """CREATE TABLE chunk_tags (
            user_id TEXT NOT NULL,
            tag TEXT NOT NULL,
            chunk_id INTEGER NOT NULL,
            PRIMARY KEY (user_id, tag, chunk_id)
        ) WITHOUT ROWID""",
        "CREATE INDEX chunk_tags_by_chunk ON chunk_tags (chunk_id)",
        """CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            text, owner, tagset,
            content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
        )""",
        """CREATE TABLE pads (
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            items TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (user_id, session_id)
        ) WITHOUT ROWID""",
    ),
    # 2: document frequencies of words, for keyword search's common-terms cutoff.
    ("CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab (chunks_fts, 'row')",),
    # 3: a row that cannot be inserted when a write's vectors are of another model than
    # the store's, so a batch checks the model inside its own transaction (remote store).
    ("CREATE TABLE model_guard (ok INTEGER NOT NULL CHECK (ok = 1))",),
)

SCHEMA_VERSION = len(MIGRATIONS)

# -- statements both backends run ------------------------------------------------------------

NOTE_ROWID = "SELECT id, created_at FROM notes WHERE user_id = ? AND note_id = ?"

NOTE_RECORD = """
    SELECT note_id, tags, model, created_at, updated_at,
           (SELECT count(*) FROM chunks WHERE note_rowid = notes.id)
    FROM notes WHERE user_id = ? AND note_id = ?"""

CHUNK_IDS = "SELECT id FROM chunks WHERE user_id = ? AND note_rowid = ?"

KEYWORD_SEARCH = """
    SELECT c.id, c.note_rowid
    FROM (SELECT rowid AS id, rank FROM chunks_fts
          WHERE chunks_fts MATCH ? AND rank MATCH 'bm25(1.0, 0.0, 0.0)'
          ORDER BY rank LIMIT ?) AS m
    JOIN chunks AS c ON c.id = m.id
    WHERE c.user_id = ?
    ORDER BY m.rank"""

HIT_ROWS = """
    SELECT n.id, n.note_id, n.tags, n.created_at, n.updated_at, c.id, c.chunk_index, c.text
    FROM notes AS n JOIN chunks AS c ON c.note_rowid = n.id
    WHERE n.user_id = ? AND c.user_id = ? AND c.id IN ({marks})"""


def tag_filter(column: str, count: int) -> str:
    """SQL requiring the chunk in ``column`` to carry ``count`` tags (bound as
    ``user_id, tag`` pairs), or ``""`` for none."""
    return "".join(
        f" AND {column} IN (SELECT chunk_id FROM chunk_tags WHERE user_id = ? AND tag = ?)"
        for _ in range(count)
    )


def marks(count: int) -> str:
    """``?, ?, …`` for ``count`` parameters."""
    return ", ".join("?" * count)
