"""The embedded backend: one SQLite file, owned by one connection pool.

Both stores keep their tables in the same file (the schedule tables beside the state
store's), and both open it the same way, which is written once here: make the file's
directory (:func:`~._urls.make_room`), create the file readable by its owner only, and
migrate the store's tables (:class:`~._migrations.Migrations`); a failure on the way
closes the pool and says why in an operator's words (:mod:`._sqlite_causes`). The
subclass keeps only its SQL and runs it through :meth:`EmbeddedBackend._reading` or
:meth:`EmbeddedBackend._writing`, which translate apsw's and the filesystem's errors the
same way for both.

A backend is a context manager; one collected while open warns with a
:class:`ResourceWarning` naming it, so a leak fails a test run with warnings as errors.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import apsw

from . import _sqlite_causes as causes
from ._errors import StoreError
from ._migrations import Migrations
from ._sqlite_pool import BUSY_TIMEOUT_MS, ConnectionPool, create_private
from ._urls import make_room


class EmbeddedBackend:
    """A store's tables in the SQLite file at ``path``, migrated by ``migrations``."""

    def __init__(
        self,
        path: Path,
        *,
        url: str,
        migrations: Migrations,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self._url = url
        self._path = path
        self._what = migrations.what
        self._pool = ConnectionPool(path, url=url, busy_timeout_ms=busy_timeout_ms)
        try:
            make_room(path, url)
            create_private(path)
            self._pool.migrate(migrations)
        except (apsw.Error, OSError, StoreError) as exc:
            self._pool.close()
            raise causes.unavailable(exc, path, url) from exc

    @property
    def url(self) -> str:
        return self._url

    def close(self) -> None:
        self._pool.close()
        self._closing()

    def _closing(self) -> None:
        """What the subclass closes with the pool (nothing by default)."""

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None and not pool.closed:
            warnings.warn(f"{self._what} {self._url!r} not closed", ResourceWarning, stacklevel=1)
            pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        """apsw's and the filesystem's errors as :class:`StoreError` naming the cause."""
        with causes.translated(self._path, self._url):
            yield

    @contextlib.contextmanager
    def _connected(self) -> Iterator[apsw.Connection]:
        """A connection outside any transaction (one statement, one snapshot)."""
        with causes.translated(self._path, self._url), self._pool.connection() as conn:
            yield conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[apsw.Connection]:
        """A connection in one read transaction (see :meth:`ConnectionPool.read`)."""
        with causes.translated(self._path, self._url), self._pool.read() as conn:
            yield conn

    @contextlib.contextmanager
    def _writing(self) -> Iterator[apsw.Connection]:
        """A connection in one write transaction (see :meth:`ConnectionPool.write`)."""
        with causes.translated(self._path, self._url), self._pool.write() as conn:
            yield conn
