"""Connections to one SQLite file through apsw, pooled, each with sqlite-vec loaded.

Python's own ``sqlite3`` may be built without extension loading; apsw ships its own
SQLite, which loads sqlite-vec. Connections are pooled (WAL lets readers run beside a
writer), every write is one ``BEGIN IMMEDIATE`` transaction (so two processes never
deadlock upgrading a read lock, and wait up to the busy timeout for each other), and
``synchronous=NORMAL`` in WAL mode loses nothing to a killed process: a transaction is
either in the log with its commit record or not at all.

Waits are bounded by the running call's deadline (:mod:`._waits`): each lent connection's
busy timeout is what is left of it, and a write commits only while the deadline is not
near (else it is rolled back and :class:`~._errors.StoreTimeout` raised).

Opening writes nothing when the schema is current: :meth:`ConnectionPool.migrate` reads
a store's version first (:mod:`._migrations`) and takes the write lock only to migrate.
When the file cannot be opened for writing because its file system is full or
read-only (SQLite must create or grow the ``-shm`` index beside it), and no write-ahead
log holds changes, a connection is opened read-only on the file as it stands
(``immutable``): reads go on, and a write fails naming the cause (:mod:`._sqlite_causes`).
Such a connection is never kept, so the next request tries a writable one again.
"""

from __future__ import annotations

import contextlib
import os
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import apsw
import sqlite_vec

from . import _sqlite_causes as causes
from . import _waits as waits
from ._errors import StoreError, StoreTimeout
from ._migrations import META_TABLE, READ_VERSION, Migrations

BUSY_TIMEOUT_MS = 30_000
"""How long a write waits for another connection's (or process's) write to end."""

IDLE_CONNECTIONS = 8
"""Connections kept open for reuse; more are opened under load and closed after."""


def create_private(path: Path) -> None:
    """Create the database file readable by its owner only, if it does not exist yet.

    It holds every user's data; SQLite gives its journal and WAL files the same mode.
    """
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))


class ConnectionPool:
    """Connections to the database at ``path``, lent one at a time to each user of it."""

    def __init__(self, path: Path, *, url: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        self._path = path
        self._url = url
        self._busy_timeout_ms = busy_timeout_ms
        self._lock = threading.Lock()
        self._idle: list[apsw.Connection] = []
        self._read_only: dict[int, causes.Cause] = {}
        self.closed = False

    def _open(self) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        try:
            return self._prepared(apsw.Connection(str(self._path), flags=flags), wal=True)
        except apsw.Error as exc:
            cause = causes.diagnose(exc, self._path)
            if cause.kind not in ("full", "read-only") or not _whole_without_log(self._path):
                raise
        uri = "file:" + urllib.parse.quote(str(self._path)) + "?immutable=1"
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
        conn = self._prepared(apsw.Connection(uri, flags=flags), wal=False)
        with self._lock:
            self._read_only[id(conn)] = cause
        return conn

    def _prepared(self, conn: apsw.Connection, *, wal: bool) -> apsw.Connection:
        try:
            conn.enable_load_extension(True)
            conn.load_extension(sqlite_vec.loadable_path())
            conn.enable_load_extension(False)
            if wal:
                conn.set_busy_timeout(self._busy_timeout_ms)
                # A switch into WAL that meets another connection's lock fails at once,
                # without the busy handler: two processes opening a new store both try it.
                waits.retried(
                    lambda: conn.execute("PRAGMA journal_mode = WAL"),
                    self._busy_timeout_ms / 1000,
                    (apsw.BusyError,),
                )
                conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def connection(self) -> Iterator[apsw.Connection]:
        """A connection, outside any transaction, whose busy wait ends before the call's
        deadline (:class:`StoreTimeout` when none is left)."""
        wait = waits.budget(self._busy_timeout_ms / 1000)
        if wait <= 0:
            raise StoreTimeout(f"state store {self._url!r}: the call's deadline has come")
        with self._lock:
            if self.closed:
                raise StoreError(f"state store {self._url!r} is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open()
        conn.set_busy_timeout(int(wait * 1000))
        try:
            yield conn
        finally:
            with self._lock:
                writable = self._read_only.pop(id(conn), None) is None
                keep = writable and not self.closed and len(self._idle) < IDLE_CONNECTIONS
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """A connection inside one ``BEGIN IMMEDIATE`` transaction, committed on success
        while the call's deadline is not near (see :mod:`._waits`)."""
        with self.connection() as conn:
            cause = self._read_only.get(id(conn))
            if cause is not None:
                raise StoreError(f"state store {self._url!r} failed: {cause.reason}", fix=cause.fix)
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                if waits.expired():
                    raise StoreTimeout(
                        f"state store {self._url!r}: the call's deadline came before the"
                        " write could commit; nothing was changed"
                    )
                conn.execute("COMMIT")
                waits.committed()
            except BaseException:
                if not conn.getautocommit():
                    conn.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A connection inside one read transaction (one snapshot for every statement)."""
        with self.connection() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")

    def migrate(self, migrations: Migrations) -> None:
        """Apply the migrations past the database's version, in one transaction; nothing is
        written when it is current (a store on a full or read-only disk still opens)."""
        with self.connection() as conn:
            if self._version(conn, migrations) == migrations.newest:
                return
        with self.write() as conn:
            conn.execute(META_TABLE)
            version = self._version(conn, migrations)  # another process may have migrated since
            for step in migrations.past(version):
                if isinstance(step, str):
                    conn.execute(step)
                    continue
                for sql, args in step(lambda sql, args: list(conn.execute(sql, args))):
                    conn.execute(sql, args)
            if version != migrations.newest:
                conn.execute(*migrations.stamp())

    def _version(self, conn: apsw.Connection, migrations: Migrations) -> int:
        """The version kept under the migrations' key (0 before ``store_meta`` exists);
        refused when newer than this toolcage's."""
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'store_meta'").fetchone() is None:
            return 0
        row = conn.execute(READ_VERSION, (migrations.key,)).fetchone()
        return migrations.checked(int(row[0]) if row else 0, self._url)

    def checkup(self) -> list[str]:
        """The damage SQLite's ``PRAGMA quick_check`` finds (``[]`` when the file is whole),
        after a write transaction begun and rolled back (:class:`StoreError` naming the
        cause when the file cannot be written)."""
        with self.connection() as conn:
            cause = self._read_only.get(id(conn))
            if cause is not None:
                raise StoreError(f"state store {self._url!r}: {cause.reason}", fix=cause.fix)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            found = [str(row[0]) for row in conn.execute("PRAGMA quick_check(20)")]
        return [] if found == ["ok"] else found

    def close(self) -> None:
        """Close the idle connections; lent ones close when they come back."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _whole_without_log(path: Path) -> bool:
    """Whether the database file holds every change: it exists and no write-ahead log
    beside it holds any (a clean close checkpoints and removes the log)."""
    try:
        return path.stat().st_size > 0 and os.stat(f"{path}-wal").st_size == 0
    except FileNotFoundError:
        return path.exists()
    except OSError:
        return False
