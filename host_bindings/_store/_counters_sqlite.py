"""Rate-limit counters in an embedded store's file (:mod:`._counters` says how they work):
apart from the statements and the protocol, so that a runtime with rate limits on a libSQL
server, or none, does not load SQLite."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import apsw

from .._backends import _sqlite_causes as causes
from .._backends import _waits as waits
from .._backends._errors import StoreError
from .._backends._sqlite_pool import BUSY_TIMEOUT_MS, ConnectionPool
from ._counters import CHECKPOINT_PAGES, Applied, Keep, Statement, Take, WouldWait, take_of


def _first(conn: apsw.Connection, statement: Statement) -> Take | None:
    # Every row is read: a statement left unfinished would hold its transaction open.
    return take_of(conn.execute(*statement).fetchall())


class EmbeddedCounters:
    """:class:`Counters` in an embedded store's file, through its connection pool."""

    def __init__(self, pool: ConnectionPool, path: str, url: str) -> None:
        self._pool = pool
        self._path = path
        self._url = url
        self._lock = threading.Lock()
        self._conn: apsw.Connection | None = None
        self._checkpointing = threading.Event()

    def apply(
        self, statements: Sequence[Statement], *, wait: bool = True, keep: Keep | None = None
    ) -> Applied:
        if wait:
            with causes.translated(Path(self._path), self._url):
                return self._waiting(statements, keep)
        if not self._lock.acquire(blocking=False):
            raise WouldWait(f"state store {self._url!r} is in use")
        try:
            conn = self._conn if self._conn is not None else self._open()
            return _run(conn, statements, keep)
        except (apsw.BusyError, apsw.LockedError) as exc:
            raise WouldWait(f"state store {self._url!r} is locked") from exc
        except apsw.Error as exc:
            raise StoreError(f"state store {self._url!r} failed: {exc}") from exc
        finally:
            self._lock.release()

    def _waiting(self, statements: Sequence[Statement], keep: Keep | None) -> Applied:
        """:func:`_run` on a pooled connection, again while the lock is contended, until the
        busy timeout or the call's deadline."""

        def attempt() -> Applied:
            with self._pool.connection() as conn:
                return _run(conn, statements, keep)

        busy = (apsw.BusyError, apsw.LockedError)
        return waits.retried(attempt, BUSY_TIMEOUT_MS / 1000, busy)

    def _open(self) -> apsw.Connection:
        if self._pool.closed:
            raise StoreError(f"state store {self._url!r} is closed")
        conn = apsw.Connection(self._path, flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            conn.set_busy_timeout(0)
            conn.execute("PRAGMA synchronous = NORMAL")  # as the pool's: see _sqlite_pool
            conn.set_wal_hook(self._logged)  # replaces its own automatic checkpoints
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _logged(self, conn: apsw.Connection, name: str, pages: int) -> int:
        if pages >= CHECKPOINT_PAGES and not self._checkpointing.is_set():
            self._checkpointing.set()
            # A daemon: SQLite's log survives a process that exits in the middle of it.
            threading.Thread(
                target=self._checkpoint, name="toolcage-checkpoint", daemon=True
            ).start()
        return apsw.SQLITE_OK

    def _checkpoint(self) -> None:
        try:
            with self._pool.connection() as conn:
                conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_RESTART)
        except (apsw.Error, StoreError):
            pass  # the next commit past the mark tries again
        finally:
            self._checkpointing.clear()

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _run(conn: apsw.Connection, statements: Sequence[Statement], keep: Keep | None) -> Applied:
    if len(statements) == 1:  # one statement is its own transaction
        return Applied([_first(conn, statements[0])], committed=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = [_first(conn, statement) for statement in statements]
        committed = keep is None or keep(found)
        conn.execute("COMMIT" if committed else "ROLLBACK")
    except BaseException:
        if not conn.getautocommit():  # a failed COMMIT leaves the transaction open
            conn.execute("ROLLBACK")
        raise
    return Applied(found, committed)
