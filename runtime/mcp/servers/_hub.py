"""The private event loop of the MCP connections, and the servers' start and restarts.

Every configured server's session runs on one event loop in a worker thread (an anyio
:class:`~anyio.from_thread.BlockingPortal`); a tool call crosses to it and back
(:meth:`McpHub.call`).

Tools are listed when the runtime is built, not lazily: the registry, the agents' tool
lists and the config check need every tool's name, schema and tier up front, and a server
started then is the one the first call uses, so listing costs no second start. Servers
start concurrently, and one that does not start takes only itself down: its failure is
kept on its connection (:attr:`McpConnection.failure`), and once :meth:`McpHub.retry` is
called it is started again after each delay of :func:`._unavailable.retry_delay` until
it starts; then ``on_ready`` registers its tools. The clock and the sleep the retries use
are arguments, so a test can run the schedule without waiting for it.
"""

from __future__ import annotations

import itertools
import logging
import queue
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from mcp import types
from toolcage.policies import ConfigError, McpServerConfig, Redactor

from ..._errors import ToolExecutionError, UsageError
from ..._tool import ProgressCallback, ProgressUpdate
from ._client import McpConnection
from ._unavailable import retry_delay, unavailable

_logger = logging.getLogger("toolcage.mcp")
_PROGRESS_BACKLOG = 64
"""Progress reports waiting to be handed over, beyond which new ones are dropped."""


class McpHub:
    """The private event loop and the connections to every configured server."""

    def __init__(
        self,
        servers: tuple[McpServerConfig, ...],
        base_dir: Path,
        redactor: Redactor,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] = (
            anyio.from_thread.start_blocking_portal()
        )
        self.portal = self._portal_cm.__enter__()
        self._closed: anyio.Event | None = None
        self._clock = clock
        self._sleep = sleep
        self._next_attempt: dict[str, float] = {}
        self.task_group: TaskGroup
        self.portal.start_task(self._run)
        self.connections = [
            McpConnection(server, base_dir, self.task_group, redactor) for server in servers
        ]

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        self._closed = closed = anyio.Event()
        async with anyio.create_task_group() as task_group:
            self.task_group = task_group
            task_status.started()
            await closed.wait()
            task_group.cancel_scope.cancel()  # the retries first: none starts a server now
            with anyio.CancelScope(shield=True):
                for connection in self.connections:
                    await connection.stop()

    def start_all(self) -> None:
        """Start every server and list its tools, concurrently; a server that does not
        start keeps why as its ``failure``."""

        async def start(connection: McpConnection) -> None:
            try:
                await connection.ensure_started()
            except ToolExecutionError as exc:
                _logger.warning(
                    "%s",
                    exc.message,
                    extra={"event": "mcp.server_unavailable", "server": connection.server.name},
                )

        async def start_all() -> None:
            async with anyio.create_task_group() as group:
                for connection in self.connections:
                    group.start_soon(start, connection)

        self.portal.call(start_all)

    def retry(self, on_ready: Callable[[McpConnection], None]) -> None:
        """Start again, with backoff, each server that did not start (and is not disabled);
        ``on_ready`` is called on the hub's thread with each that does, and may refuse it
        by raising :class:`ConfigError` or :class:`UsageError`."""

        async def start() -> None:
            for connection in self.connections:
                if connection.failure is not None and connection.disabled is None:
                    # known before the task first runs: a call made meanwhile is told when
                    self._next_attempt[connection.server.name] = self._clock() + retry_delay(0)
                    self.task_group.start_soon(self._retry, connection, on_ready)

        self.portal.call(start)

    def unavailable(self, connection: McpConnection) -> ToolExecutionError:
        """What a call of a tool of ``connection``'s server gets while it has not started."""
        failure = connection.failure or ToolExecutionError(
            f"MCP server {connection.server.name!r} is not available"
        )
        next_attempt = self._next_attempt.get(connection.server.name)
        return unavailable(failure, None if next_attempt is None else next_attempt - self._clock())

    async def _retry(
        self, connection: McpConnection, on_ready: Callable[[McpConnection], None]
    ) -> None:
        name = connection.server.name
        try:
            for attempt in itertools.count():
                delay = retry_delay(attempt)
                self._next_attempt[name] = self._clock() + delay
                await self._sleep(delay)
                try:
                    await connection.ensure_started()
                except ToolExecutionError as exc:
                    if connection.disabled is not None:
                        return
                    _logger.info(
                        "%s",
                        exc.message,
                        extra={"event": "mcp.server_unavailable", "server": name},
                    )
                    continue
                break
        finally:
            self._next_attempt.pop(name, None)
        try:
            on_ready(connection)
        except (ConfigError, UsageError) as exc:
            connection.failure = ToolExecutionError(
                f"MCP server {name!r} started, but its tools were refused: {exc}",
                details={"server": name},
            )
            _logger.warning(
                "%s",
                connection.failure.message,
                extra={"event": "mcp.server_unavailable", "server": name},
            )
            await connection.stop()
            return
        _logger.info(
            "MCP server %r started; its tools are available",
            name,
            extra={"event": "mcp.server_recovered", "server": name},
        )

    async def call(
        self,
        connection: McpConnection,
        tool: str,
        arguments: dict[str, Any],
        report: ProgressCallback,
    ) -> types.CallToolResult:
        """Run ``connection.call`` on the hub's loop; cancelling this cancels that call.

        A worker thread waits for the result and hands the server's progress reports to
        ``report`` on the caller's loop as they arrive.
        """
        updates: queue.SimpleQueue[ProgressUpdate | None] = queue.SimpleQueue()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if updates.qsize() < _PROGRESS_BACKLOG:  # a flood is dropped, not buffered
                fraction = min(max(progress / total, 0.0), 1.0) if total else None
                updates.put(ProgressUpdate(message or "", fraction))

        async def run() -> types.CallToolResult:
            return await connection.call(tool, arguments, on_progress)

        future = self.portal.start_task_soon(run)
        future.add_done_callback(lambda _: updates.put(None))

        def wait() -> types.CallToolResult:
            while (update := updates.get()) is not None:
                anyio.from_thread.run_sync(report, update)
            return future.result()

        try:
            return await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the retries, every server and the loop."""
        if self._closed is None or self._closed.is_set():
            return
        self.portal.call(self._closed.set)
        self._portal_cm.__exit__(None, None, None)

    async def aclose(self) -> None:
        """:meth:`close` from async code, without blocking the caller's loop."""
        await anyio.to_thread.run_sync(self.close)
