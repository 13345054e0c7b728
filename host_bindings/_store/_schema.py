"""The store's tables, and the migrations that build them, versioned in the database.

``store_meta`` holds ``schema_version`` (the number of migrations applied) and, once a
vector is stored, ``embedding_model`` and ``dimensions``. A backend opens the database,
creates ``store_meta`` if it is missing, and applies, in one write transaction, every
migration past the recorded version; several processes opening one database at once
serialise on that transaction, and the loser finds the work done. A migration step is
SQL, or a function that reads the database and returns statements (the keyword index of
every stored chunk and event, see :func:`._keywords.backfill`).

Vector tables depend on the backend and on the embedder's dimensions, so each backend
creates its own when the first vector arrives (see ``vector_tables`` in each backend).

Conversation events (``events``) are kept apart from notes: they carry no tags and no note
id, so nothing that reads or deletes notes can reach them. Their vectors (``event_vectors``,
float32 blobs, one row per event with the embedder's model and dimensions as ``model``)
are made after the fact, by the search that needs them, and compared only with a query
of the same model. Chunks and events are keyword-indexed per user (``keyword_*``, see
:mod:`._keywords`).

Rows of every table carry ``user_id`` (``chunks`` and ``chunk_tags`` copy it from their
note), so each statement can scope by user without a join. Notes, events and pads also
record who wrote them, as ``Principal.to_record()`` JSON: a note its first and its last
writer (``created_by``, ``updated_by``), an event the turn's principal (``created_by``), a
pad its last writer (``updated_by``); ``NULL`` for rows written before they were kept.
They are for accountability: no statement decides access by them.
"""

from __future__ import annotations

from .._backends._migrations import META_TABLE as META_TABLE
from .._backends._migrations import Migrations, Step
from ._keywords import backfill
from ._vector_owners import index_by_owner

NOW = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
"""The backend's clock, as the ISO 8601 UTC text every timestamp is stored as."""

Migration = tuple[Step, ...]

MIGRATIONS: tuple[Migration, ...] = (
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
    # 4: conversation events (a turn's user message and final assistant text), keyword
    # searchable across the user's sessions.
    (
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            role TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
        "CREATE INDEX events_by_session ON events (user_id, session_id, id)",
        """CREATE VIRTUAL TABLE events_fts USING fts5 (
            text, owner,
            content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
        )""",
        """CREATE TABLE event_vectors (
            event_id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL
        )""",
        "CREATE INDEX event_vectors_by_user ON event_vectors (user_id, model)",
    ),
    # 5: rate-limit counters, shared by every process of the host (see _counters).
    (
        """CREATE TABLE rate_counters (
            key TEXT PRIMARY KEY,
            level REAL NOT NULL,
            stamp REAL NOT NULL,
            granted REAL NOT NULL
        ) WITHOUT ROWID""",
    ),
    # 6: keyword search on each user's own statistics (see _keywords) instead of one FTS5
    # index of every user's rows, and the principal that wrote each note, event and pad.
    (
        "ALTER TABLE notes ADD COLUMN created_by TEXT",
        "ALTER TABLE notes ADD COLUMN updated_by TEXT",
        "ALTER TABLE events ADD COLUMN created_by TEXT",
        "ALTER TABLE pads ADD COLUMN updated_by TEXT",
        """CREATE TABLE keyword_corpora (
            id INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            documents INTEGER NOT NULL DEFAULT 0,
            length INTEGER NOT NULL DEFAULT 0,
            UNIQUE (user_id, kind)
        )""",
        """CREATE TABLE keyword_terms (
            corpus INTEGER NOT NULL,
            term TEXT NOT NULL,
            documents INTEGER NOT NULL,
            PRIMARY KEY (corpus, term)
        ) WITHOUT ROWID""",
        """CREATE TABLE keyword_postings (
            corpus INTEGER NOT NULL,
            term TEXT NOT NULL,
            doc INTEGER NOT NULL,
            hits INTEGER NOT NULL,
            length INTEGER NOT NULL,
            PRIMARY KEY (corpus, term, doc)
        ) WITHOUT ROWID""",
        "CREATE INDEX keyword_postings_by_doc ON keyword_postings (corpus, doc)",
        backfill,
        "DROP TABLE chunks_vocab",
        "DROP TABLE chunks_fts",
        "DROP TABLE events_fts",
        # The remote store's index of every user's vectors: searches scan the user's own.
        "DROP INDEX IF EXISTS chunk_vectors_idx",
    ),
    # 7: keyword terms as _terms makes them (text in NFKC form and case-folded; symbols,
    # scripts without spaces and whole long words as terms): every chunk and event is
    # indexed again, so what was saved before is found by the queries of now.
    (
        "DELETE FROM keyword_postings",
        "DELETE FROM keyword_terms",
        "DELETE FROM keyword_corpora",
        backfill,
    ),
    # 8: each user's vectors as a vec0 partition of their own (see _sqlite_vectors), filled
    # from the sign bits stored so far; nothing on the remote store.
    (index_by_owner,),
)

SCHEMA_VERSION = len(MIGRATIONS)

STATE = Migrations("schema_version", MIGRATIONS, "state store")
"""The state store's migrations, versioned as ``schema_version`` in ``store_meta``."""

# -- statements both backends run ------------------------------------------------------------

NOTE_ROWID = "SELECT id, created_at FROM notes WHERE user_id = ? AND note_id = ?"

NOTE_RECORD = """
    SELECT note_id, tags, model, created_at, updated_at,
           (SELECT count(*) FROM chunks WHERE note_rowid = notes.id)
    FROM notes WHERE user_id = ? AND note_id = ?"""

CHUNK_IDS = "SELECT id FROM chunks WHERE user_id = ? AND note_rowid = ?"

INSERT_NOTE = f"""
    INSERT INTO notes
        (user_id, note_id, tags, model, created_by, updated_by, created_at, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, {NOW}, {NOW})"""
"""A new note (bound as ``user_id, note_id, tags, model, writer, writer``)."""

UPDATE_NOTE = f"""
    UPDATE notes SET tags = ?, model = ?, updated_by = ?, updated_at = {NOW}
    WHERE user_id = ? AND note_id = ?"""
"""A replaced note's row (bound as ``tags, model, writer, user_id, note_id``)."""

READ_PAD = "SELECT items, updated_at FROM pads WHERE user_id = ? AND session_id = ?"

WRITE_PAD = f"""
    INSERT INTO pads (user_id, session_id, items, updated_by, updated_at)
    VALUES (?, ?, ?, ?, {NOW})
    ON CONFLICT (user_id, session_id) DO UPDATE SET items = excluded.items,
        updated_by = excluded.updated_by, updated_at = excluded.updated_at"""
"""Replace a session's pad (bound as ``user_id, session_id, items, writer``)."""

HIT_ROWS = """
    SELECT n.id, n.note_id, n.tags, n.created_at, n.updated_at, c.id, c.chunk_index, c.text
    FROM notes AS n JOIN chunks AS c ON c.note_rowid = n.id
    WHERE n.user_id = ? AND c.user_id = ? AND c.id IN ({marks})"""

INSERT_EVENT = f"""
    INSERT INTO events (user_id, session_id, role, text, created_by, created_at)
    VALUES (?, ?, ?, ?, ?, {NOW})"""

UNEMBEDDED_EVENTS = """
    SELECT e.id, e.text FROM events AS e
    LEFT JOIN event_vectors AS v ON v.event_id = e.id AND v.model = ?
    WHERE e.user_id = ? AND v.event_id IS NULL
    ORDER BY e.id DESC LIMIT ?"""
"""The user's newest events without a vector of a model (bound as ``model key, user_id,
limit``)."""

SAVE_EVENT_VECTOR = """
    INSERT OR REPLACE INTO event_vectors (event_id, user_id, model, vector)
    SELECT id, user_id, ?, ? FROM events WHERE id = ? AND user_id = ?"""
"""Store an event's vector (bound as ``model key, vector, id, user_id``): nothing for an
event of another user."""

EVENT_ROWS = """
    SELECT id, session_id, role, text, created_at FROM events
    WHERE user_id = ? AND id IN ({marks})"""


def nearest_events(distance: str) -> str:
    """The user's events nearest a query vector by the backend's cosine ``distance``
    function of two float32 blobs (bound as ``query, user_id, model key, max distance,
    limit``): a scan of the user's event vectors, whose count grows one per turn."""
    return f"""
    SELECT event_id FROM (
        SELECT event_id, {distance} AS d FROM event_vectors WHERE user_id = ? AND model = ?)
    WHERE d <= ? ORDER BY d, event_id LIMIT ?"""


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
