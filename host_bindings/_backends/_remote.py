"""The remote backend: a libSQL server, through libsql-client's HTTP client.

Both stores may live on one server (the schedule tables beside the state store's), and
both talk to it the same way, which is written once here: one
:class:`~._libsql_client.BoundedClient` (every request bounded by a timeout and by the
running call's deadline), closed once by :meth:`RemoteBackend.close` or the context
manager (a backend collected while open warns with a :class:`ResourceWarning` naming
it), and one translation of the client's errors into :class:`~._errors.StoreError`:

=============================  ==================================================
what happened                  message (after ``<store> '<url>'``)
=============================  ==================================================
the server refused it          ``failed: <the server's words>``
no answer in time              ``did not answer within 30 s; what was asked may be
                               done`` (or ``before the call's deadline``): the
                               request was sent, so it may have been carried out
no connection                  ``is unreachable: <why>``
=============================  ==================================================

The server's HTTP API has no interactive transactions; a ``batch`` is one (``BEGIN``,
each statement on the previous one's success, ``COMMIT`` or ``ROLLBACK``). So a migration
is one batch of every statement past the stored version and the new version; of two
hosts migrating at once, one batch fails on the tables the other made, and a second pass
finds the work done.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Self

import aiohttp
import libsql_client

from . import _waits as waits
from ._errors import StoreError, StoreUnavailable
from ._libsql_client import BoundedClient
from ._migrations import META_TABLE, READ_VERSION, Migrations, Statement

REQUEST_TIMEOUT = 30.0
"""Seconds a request to the server may take before it is given up."""


class RemoteBackend:
    """A store's tables on the libSQL server at ``endpoint``, migrated by ``migrations``;
    ``url`` is what messages show (never the token)."""

    def __init__(
        self,
        endpoint: str,
        *,
        url: str,
        migrations: Migrations,
        auth_token: str | None = None,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        self._url = url
        self._what = migrations.what
        self._lock = threading.Lock()
        self._closed = False
        self._timeout = timeout
        try:
            self._client = BoundedClient(endpoint, auth_token=auth_token, timeout=timeout)
        except (libsql_client.LibsqlError, ValueError) as exc:
            self._closed = True
            raise StoreUnavailable(url, str(exc)) from exc
        try:
            self._migrate(migrations)
        except StoreError as exc:
            self.close()
            raise StoreUnavailable(url, str(exc.__cause__ or exc), fix=exc.fix) from exc

    @property
    def url(self) -> str:
        return self._url

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._client.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            warnings.warn(f"{self._what} {self._url!r} not closed", ResourceWarning, stacklevel=1)
            self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- statements ----------------------------------------------------------------------

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement."""
        with self._translated():
            result = self._client.execute(sql, args)
        return [tuple(row) for row in result.rows]

    def _batch(self, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
        """Run ``statements`` as one transaction; the rows of each."""
        return [[tuple(row) for row in result.rows] for result in self._results(statements)]

    def _changed(self, statements: Sequence[Statement]) -> list[int]:
        """Run ``statements`` as one transaction; how many rows each changed."""
        return [int(result.rows_affected) for result in self._results(statements)]

    def _results(self, statements: Sequence[Statement]) -> list[Any]:
        with self._translated():
            results = self._client.batch(statements)
        waits.committed()
        return results

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        """The client's errors as :class:`StoreError` (see the table above)."""
        if self._closed:
            raise StoreError(f"{self._what} {self._url!r} is closed")
        try:
            yield
        except libsql_client.LibsqlError as exc:
            raise StoreError(f"{self._what} {self._url!r} failed: {exc}") from exc
        except TimeoutError as exc:  # sent, perhaps done: never reported as a clean timeout
            raise StoreError(
                f"{self._what} {self._url!r} did not answer {exc}; what was asked may be done"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise StoreError(f"{self._what} {self._url!r} is unreachable: {exc}") from exc

    # -- migrations ----------------------------------------------------------------------

    def _migrate(self, migrations: Migrations) -> None:
        self._execute(META_TABLE)
        for _ in range(2):  # a second pass when another host migrated at the same time
            version = self._version(migrations)
            if version == migrations.newest:
                return
            statements: list[Statement] = []
            for step in migrations.past(version):
                # a function reads now, and its statements run in the batch (it guards them)
                statements += [(step, ())] if isinstance(step, str) else step(self._execute)
            statements += self._extra_migration_statements()
            statements.append(migrations.stamp())
            with contextlib.suppress(StoreError):
                self._batch(statements)
        if self._version(migrations) != migrations.newest:
            raise StoreError(f"{self._what} {self._url!r} could not be migrated")

    def _extra_migration_statements(self) -> list[Statement]:
        """Statements of the subclass's own to run in a migration's batch (none by
        default; the state store's vector tables, which depend on the stored model)."""
        return []

    def _version(self, migrations: Migrations) -> int:
        found = self._execute(READ_VERSION, (migrations.key,))
        return migrations.checked(int(found[0][0]) if found else 0, self._url)
