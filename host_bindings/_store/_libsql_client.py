"""libsql-client's synchronous client, with a time limit on every request.

``ClientSync`` runs the async client on an event loop in its own thread and waits for
each request without a limit of its own (aiohttp's default allows five minutes), so a
server that stops answering would hold a guest's thread that long. Here each request's
coroutine is wrapped in :func:`asyncio.wait_for`, which cancels it (and its HTTP
request) when the time is up. That needs the two private attributes ``ClientSync``
keeps, ``_executor`` and ``_client``: this module is the only place that touches them,
and ``tests/host_bindings/store/test_libsql_client.py`` fails if the pinned version
moves them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import libsql_client


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
        return self._executor.submit_coro(asyncio.wait_for(request, self._timeout))

    def batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[Any]:
        """The result sets of ``statements``, run as one transaction."""
        stmts = [libsql_client.Statement(sql, list(args)) for sql, args in statements]
        request = self._client.batch(stmts)
        return list(self._executor.submit_coro(asyncio.wait_for(request, self._timeout)))

    def close(self) -> None:
        self._sync.close()
