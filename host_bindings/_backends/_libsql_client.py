"""libsql-client's synchronous client, with a time limit on every request.

``ClientSync`` runs the async client on an event loop in its own thread and waits for
each request without a limit of its own (aiohttp's default allows five minutes), so a
server that stops answering would hold a guest's thread that long. Here each request's
coroutine is wrapped in :func:`asyncio.wait_for`, which cancels it (and its HTTP
request) when the time is up. That needs the two private attributes ``ClientSync``
keeps, ``_executor`` and ``_client``: this module is the only place that touches them,
and ``tests/host_bindings/store/test_libsql_client.py`` fails if the pinned version
moves them.

The limit of a request is ``timeout`` or what is left of the running call's deadline,
the less (:func:`._waits.budget`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import libsql_client

from . import _waits as waits


class BoundedClient:
    """Requests to one libSQL server over HTTP(S), each given up after ``timeout`` seconds
    with :class:`TimeoutError`."""

    def __init__(self, endpoint: str, *, auth_token: str | None, timeout: float) -> None:
        self._sync = libsql_client.create_client_sync(endpoint, auth_token=auth_token)
        self._executor: Any = self._sync._executor
        self._client: Any = self._sync._client
        self._timeout = timeout

    def execute(self, sql: str, args: Sequence[Any]) -> Any:
        """The result set of one statement."""
        request = self._client.execute(libsql_client.Statement(sql, list(args)))
        return self._bounded(request)

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """The result sets of ``statements``, run as one transaction."""
        stmts = [libsql_client.Statement(sql, list(args)) for sql, args in statements]
        return list(self._bounded(self._client.batch(stmts)))

    def _bounded(self, request: Any) -> Any:
        """``request``'s result, or :class:`TimeoutError` saying which limit it ran into."""
        limit = waits.budget(self._timeout)
        try:
            return self._executor.submit_coro(asyncio.wait_for(request, limit))
        except TimeoutError:
            if limit < self._timeout:
                raise TimeoutError("before the call's deadline") from None
            raise TimeoutError(f"within {self._timeout:g} s") from None

    def close(self) -> None:
        self._sync.close()
