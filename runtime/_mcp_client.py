"""Connections to the MCP servers of ``[[mcp.servers]]``, on an event loop of their own.

The SDK's client session lives inside ``async with`` blocks that must be entered and left
by one task, while tool calls come from whichever task the host runs them in. So every
session runs in one task of its own on a private event loop in a worker thread (an anyio
:class:`~anyio.from_thread.BlockingPortal`), and a call crosses to it and back.

Tools are listed when the runtime is built, not lazily: the registry, the agents' tool
lists and the config check need every tool's name, schema and tier up front, and a server
started then is the one the first call uses, so listing costs no second start. Servers
start concurrently; one that does not start is a config error.

A call that fails because the server died, or that is cancelled or times out (the server
may still be working on it), stops the server -- its whole process group -- and the next
call starts it again. ``notifications/tools/list_changed`` makes the session list the
tools again (one listing at a time, however many notifications arrive, each bounded by the
server's ``timeout``); a tool the server no longer offers is then refused without asking it.

A stdio server is spoken to through :mod:`._mcp_stdio`, which bounds each message; its
listings are bounded by :class:`._mcp_limits.ListingBounds`. A server past one of those
bounds is stopped and disabled (:mod:`._mcp_limits` says why not restarted).
"""

from __future__ import annotations

import logging
import os
import queue
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from toolcage.policies import McpServerConfig

from ._errors import ToolExecutionError
from ._mcp_limits import ListingBounds, McpLimitExceeded, message_too_large
from ._mcp_sandbox import server_argv, server_uid, unreachable
from ._mcp_stdio import stdio_transport
from ._tool import ProgressCallback, ProgressUpdate

_logger = logging.getLogger("toolcage.mcp")
_PROGRESS_BACKLOG = 64
"""Progress reports waiting to be handed over, beyond which new ones are dropped."""


class McpServerUnavailable(Exception):
    """A server could not be started or listed."""


class McpConnection:
    """One server's session; every ``async`` method here runs on the hub's loop."""

    def __init__(self, server: McpServerConfig, base_dir: Path, hub: McpHub) -> None:
        self.server = server
        self.tools: dict[str, types.Tool] = {}
        """The server's tools by their own names, as last listed."""
        self._argv = server_argv(server, base_dir) if server.command is not None else None
        self._base_dir = base_dir
        self._hub = hub
        self._session: ClientSession | None = None
        self._stop: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._refreshes: TaskGroup | None = None
        self._refreshing = False
        self._refresh_again = False
        self._bounds = ListingBounds(server)
        self._disabled: McpLimitExceeded | None = None
        self._lock: anyio.Lock | None = None

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None = None
    ) -> types.CallToolResult:
        """Call ``tool``, starting the server first if it is not running."""
        session = await self.ensure_started()
        try:
            return await session.call_tool(tool, arguments, progress_callback=progress)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self.stop()
            raise
        except MCPError as exc:
            if exc.code != types.CONNECTION_CLOSED:  # the server answered with an error
                raise ToolExecutionError(f"MCP server {self.server.name!r}: {exc}") from exc
            failure: Exception = exc
        except Exception as exc:
            failure = exc
        await self.stop()
        if self._disabled is not None:
            raise self._disabled.error() from failure
        raise ToolExecutionError(
            f"MCP server {self.server.name!r} stopped during the call "
            f"({_describe(failure)}); it restarts on the next call"
        ) from failure

    async def ensure_started(self) -> ClientSession:
        """The running session, started (and its tools listed) if there is none."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._disabled is not None:
                raise self._disabled.error()
            if self._session is None:
                try:
                    with anyio.fail_after(self.server.timeout):
                        await self._hub.task_group.start(self._serve)
                except Exception as exc:
                    if self._disabled is not None:
                        raise self._disabled.error() from exc
                    raise ToolExecutionError(
                        f"MCP server {self.server.name!r} did not start: {self._why(exc)}"
                    ) from exc
            assert self._session is not None  # noqa: S101 -- set by _serve before started()
            return self._session

    async def stop(self) -> None:
        """Stop the server (if running) and wait until its processes are gone."""
        if self._stop is not None and self._done is not None and not self._done.is_set():
            self._session = None
            self._stop.set()
            await self._done.wait()

    def _why(self, exc: BaseException) -> str:
        """Why the server did not start, with what its uid cannot reach when it runs as
        another one (bubblewrap then fails before the server says a word)."""
        reason = _describe(exc)
        uid = server_uid(self.server) if self.server.command is not None else None
        try:
            hint = unreachable(self.server, self._base_dir, uid) if uid is not None else None
        except OSError:  # a path went away meanwhile: nothing more to say
            hint = None
        return f"{reason}; {hint}" if hint else reason

    def _disable(self, exceeded: McpLimitExceeded) -> None:
        """Stop the server for good: it went past one of its bounds."""
        if self._disabled is None:
            self._disabled = exceeded
            _logger.warning(
                "MCP server %r disabled: %s",
                self.server.name,
                exceeded,
                extra={
                    "event": "mcp.server_disabled",
                    "server": self.server.name,
                    "limit": exceeded.key,
                },
            )
        if self._stop is not None:
            self._session = None
            self._stop.set()

    async def _serve(self, *, task_status: TaskStatus[None]) -> None:
        self._stop, self._done = anyio.Event(), anyio.Event()
        stop, done, started = self._stop, self._done, False
        self._bounds = ListingBounds(self.server)
        self._refreshing = False
        try:
            async with self._open() as session, anyio.create_task_group() as refreshes:
                self._refreshes = refreshes
                await session.initialize()
                await self._list(session)
                self._session = session
                started = True
                task_status.started()
                await stop.wait()
                refreshes.cancel_scope.cancel()
        except Exception as exc:
            if not started:
                raise
            reason = _describe(exc)
            _logger.info(
                "MCP server %r ended: %s",
                self.server.name,
                reason,
                extra={"event": "mcp.server_ended", "server": self.server.name, "reason": reason},
            )
        finally:
            if self._session is not None and not stop.is_set():
                self._session = None
            done.set()

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[ClientSession]:
        async with AsyncExitStack() as stack:
            if self._argv is not None:
                transport = stdio_transport(
                    self._argv,
                    env=get_default_environment() | self._environment(),
                    max_bytes=self.server.message_bytes,
                    too_large=self._too_large,
                    user=server_uid(self.server),
                )
                streams = await stack.enter_async_context(transport)
            else:
                assert self.server.url is not None  # noqa: S101 -- one of command and url
                streams = await stack.enter_async_context(streamable_http_client(self.server.url))
            read, write = streams[0], streams[1]
            yield await stack.enter_async_context(
                ClientSession(read, write, message_handler=self._on_message)
            )

    def _environment(self) -> dict[str, str]:
        return {name: os.environ[name] for name in self.server.env if name in os.environ}

    def _too_large(self, read: int) -> None:
        self._disable(message_too_large(self.server, read))

    async def _on_message(self, message: object) -> None:
        if not isinstance(message, types.ToolListChangedNotification):
            return
        session = self._session
        if self._refreshing:
            self._refresh_again = True  # the listing under way may predate the change
        elif session is not None and self._refreshes is not None:
            self._refreshing = True
            self._refreshes.start_soon(self._refresh, session)

    async def _refresh(self, session: ClientSession) -> None:
        """List the tools again, and again while announcements arrived meanwhile."""
        try:
            self._refresh_again = True
            while self._refresh_again:
                self._refresh_again = False
                with anyio.fail_after(self.server.timeout):
                    await self._list(session)
        finally:
            self._refreshing = False

    async def _list(self, session: ClientSession) -> None:
        tools: dict[str, types.Tool] = {}
        cursor: str | None = None
        bounds = self._bounds
        try:
            bounds.begin()
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                bounds.add(page.tools)
                tools.update((tool.name, tool) for tool in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
                bounds.next_page()
        except McpLimitExceeded as exc:
            self._disable(exc)
            raise
        self.tools = tools


class McpHub:
    """The private event loop and the connections to every configured server."""

    def __init__(self, servers: tuple[McpServerConfig, ...], base_dir: Path) -> None:
        self._portal_cm: AbstractContextManager[anyio.from_thread.BlockingPortal] = (
            anyio.from_thread.start_blocking_portal()
        )
        self.portal = self._portal_cm.__enter__()
        self.connections = [McpConnection(server, base_dir, self) for server in servers]
        self._closed: anyio.Event | None = None
        self.task_group: TaskGroup
        self.portal.start_task(self._run)

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        self._closed = closed = anyio.Event()
        async with anyio.create_task_group() as task_group:
            self.task_group = task_group
            task_status.started()
            await closed.wait()
            with anyio.CancelScope(shield=True):
                for connection in self.connections:
                    await connection.stop()
            task_group.cancel_scope.cancel()

    def start_all(self) -> None:
        """Start every server and list its tools (concurrently); raise on the first failure."""

        async def start_all() -> None:
            async with anyio.create_task_group() as group:
                for connection in self.connections:
                    group.start_soon(connection.ensure_started)

        try:
            self.portal.call(start_all)
        except BaseExceptionGroup as group:
            raise McpServerUnavailable(str(group.exceptions[0])) from group
        except ToolExecutionError as exc:
            raise McpServerUnavailable(exc.message) from exc

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
        """Stop every server and the loop."""
        if self._closed is None or self._closed.is_set():
            return
        self.portal.call(self._closed.set)
        self._portal_cm.__exit__(None, None, None)

    async def aclose(self) -> None:
        """:meth:`close` from async code, without blocking the caller's loop."""
        await anyio.to_thread.run_sync(self.close)


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, McpLimitExceeded):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
