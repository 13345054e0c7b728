"""Connections to one SQLite file through apsw, pooled, each with sqlite-vec loaded.

Python's own ``sqlite3`` may be built without extension loading; apsw ships its own
SQLite, which loads sqlite-vec. Connections are pooled (WAL lets readers run beside a
writer), every write is one ``BEGIN IMMEDIATE`` transaction (so two processes never
deadlock upgrading a read lock, and wait up to the busy timeout for each other), and
``synchronous=NORMAL`` in WAL mode loses nothing to a killed process: a transaction is
either in the log with its commit record or not at all.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import apsw
import sqlite_vec

from . import _schema as schema
from ._protocol import StoreError

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
        self.closed = False

    def _open(self) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        conn = apsw.Connection(str(self._path), flags=flags)
        try:
            conn.set_busy_timeout(self._busy_timeout_ms)
            conn.enable_load_extension(True)
            conn.load_extension(sqlite_vec.loadable_path())
            conn.enable_load_extension(False)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def connection(self) -> Iterator[apsw.Connection]:
        """A connection, outside any transaction."""
        with self._lock:
            if self.closed:
                raise StoreError(f"state store {self._url!r} is closed")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._open()
        try:
            yield conn
        finally:
            with self._lock:
                keep = not self.closed and len(self._idle) < IDLE_CONNECTIONS
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """A connection inside one ``BEGIN IMMEDIATE`` transaction, committed on success."""
        with self.connection() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextlib.contextmanager
    def read(self) -> Iterator[apsw.Connection]:
        """A connection inside one read transaction (one snapshot for every statement)."""
        with self.connection() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")

    def migrate(self) -> None:
        """Apply the migrations past the database's ``schema_version``, in one transaction."""
        with self.connection() as conn:
            conn.execute(schema.META_TABLE)
        with self.write() as conn:
            row = conn.execute(
                "SELECT value FROM store_meta WHERE key = 'schema_version'"
            ).fetchone()
            version = int(row[0]) if row else 0
            if version > schema.SCHEMA_VERSION:
                raise StoreError(
                    f"state store {self._url!r} has schema version {version}, newer than"
                    f" this toolcage's {schema.SCHEMA_VERSION}"
                )
            for steps in schema.MIGRATIONS[version:]:
                for step in steps:
                    if isinstance(step, str):
                        conn.execute(step)
                        continue
                    for sql, args in step(lambda sql, args: list(conn.execute(sql, args))):
                        conn.execute(sql, args)
            conn.execute(
                "INSERT OR REPLACE INTO store_meta VALUES ('schema_version', ?)",
                (str(schema.SCHEMA_VERSION),),
            )

    def close(self) -> None:
        """Close the idle connections; lent ones close when they come back."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
