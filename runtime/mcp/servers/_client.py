"""The connection to one MCP server of ``[[mcp.servers]]``, on the hub's event loop.

The SDK's client session lives inside ``async with`` blocks that must be entered and left
by one task, while tool calls come from whichever task the host runs them in. So every
session runs in one task of its own on the hub's private event loop (:mod:`._hub`),
and a call crosses to it and back.

A call that fails because the server died, or that is cancelled or times out (the server
may still be working on it), stops the server -- its whole process group -- and the next
call starts it again. A server that exited between calls (killed, or ended by a limit) is
noticed before the next call is sent -- its process is looked at, not only its pipe -- and
started again for it. A start that fails says why (:mod:`._unavailable`).

``notifications/tools/list_changed`` makes the session list the tools again (one listing
at a time, however many notifications arrive, each bounded by the server's ``timeout``); a
tool the server no longer offers is then refused without asking it.

A stdio server is spoken to through :mod:`._stdio`, which bounds each message; its
listings are bounded by :class:`._limits.ListingBounds`. A server past one of those
bounds is stopped and disabled (:mod:`._limits` says why not restarted).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from toolcage.policies import McpServerConfig, Redactor

from ..._errors import ToolExecutionError
from ._limits import ListingBounds, McpLimitExceeded, message_too_large
from ._sandbox import server_argv, server_uid, unreachable
from ._stdio import ServerRun, stdio_transport
from ._unavailable import start_failure

_logger = logging.getLogger("toolcage.mcp")


class McpConnection:
    """One server's session; every ``async`` method here runs on the hub's loop
    (``task_group``, where the session's task runs)."""

    def __init__(
        self, server: McpServerConfig, base_dir: Path, task_group: TaskGroup, redactor: Redactor
    ) -> None:
        self.server = server
        self.tools: dict[str, types.Tool] = {}
        """The server's tools by their own names, as last listed."""
        self.failure: ToolExecutionError | None = None
        """Why its last start failed; ``None`` once it started."""
        self._base_dir = base_dir
        self._task_group = task_group
        self._redactor = redactor
        self._run: ServerRun | None = None
        self._session: ClientSession | None = None
        self._stop: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._refreshes: TaskGroup | None = None
        self._refreshing = False
        self._refresh_again = False
        self._bounds = ListingBounds(server)
        self._disabled: McpLimitExceeded | None = None
        self._lock: anyio.Lock | None = None

    @property
    def disabled(self) -> McpLimitExceeded | None:
        """The bound the server went past, which keeps it stopped; ``None``: it is not."""
        return self._disabled

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
        """The running session, started (and its tools listed) if there is none or its
        server has exited; raises the start's failure (also kept as :attr:`failure`)."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._disabled is not None:
                raise self._disabled.error()
            if self._session is not None and self._run is not None and self._run.exited():
                _logger.info(
                    "MCP server %r exited between calls; starting it again",
                    self.server.name,
                    extra={"event": "mcp.server_restarted", "server": self.server.name},
                )
                await self.stop()
            if self._session is None:
                try:
                    with anyio.fail_after(self.server.timeout):
                        await self._task_group.start(self._serve)
                except Exception as exc:
                    failure = self._disabled.error() if self._disabled else self._failed(exc)
                    self.failure = failure
                    raise failure from exc
                self.failure = None
            assert self._session is not None  # noqa: S101 -- set by _serve before started()
            return self._session

    async def stop(self) -> None:
        """Stop the server (if running) and wait until its processes are gone."""
        if self._stop is not None and self._done is not None and not self._done.is_set():
            self._session = None
            self._stop.set()
            await self._done.wait()

    def _failed(self, exc: BaseException) -> ToolExecutionError:
        """Why the server did not start, with what its uid cannot reach when it runs as
        another one (bubblewrap then fails before the server says a word)."""
        uid = server_uid(self.server) if self.server.command is not None else None
        try:
            hint = unreachable(self.server, self._base_dir, uid) if uid is not None else None
        except OSError:  # a path went away meanwhile: nothing more to say
            hint = None
        return start_failure(self.server, exc, self._run, hint, self._redactor)

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
            self._run = None
            if self.server.command is not None:
                # built at each start: a grant that appears later is taken then
                argv = server_argv(self.server, self._base_dir)
                self._run = ServerRun()
                transport = stdio_transport(
                    argv,
                    env=get_default_environment() | self._environment(),
                    max_bytes=self.server.message_bytes,
                    too_large=self._too_large,
                    user=server_uid(self.server),
                    run=self._run,
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


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, McpLimitExceeded):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
