"""``toolcage serve --socket PATH``: one long-lived runtime answering ``toolcage call``.

A whole ``toolcage call`` process costs hundreds of milliseconds, nearly all of it start-up;
a call answered by a running server costs a few (see :mod:`._client`). The server takes
connections on a Unix socket and speaks ``call --jsonl``'s line protocol on each: one call
per line, answered in order, a bad line answered with a ``validation_error`` and the
connection going on, every line bounded by the same limit (the arguments limit plus
:data:`._jsonl.LINE_OVERHEAD`). Connections are served concurrently, each call as the
in-process command runs it: the default principal, and approval only with ``--approve``.

A client may open with a hello, which :mod:`._client` always sends::

    {"hello": {"config": "/etc/toolcage.toml", "cwd": null, "approve": false}}

answered ``{"welcome": {...}}`` when it names the config this server serves (its resolved
path; for the built-in defaults, the same working directory) and the same approval, else
``{"refused": "why"}`` and the connection is closed. After a hello, a line
``{"call": {"name": N, "arguments": "JSON text"}}`` runs as ``toolcage call N 'JSON'`` does
and is answered ``{"envelope": {...}, "display": "..."}``. Before each call the config
file is checked against what it was when the server started (device, inode, size,
modification time): a server whose file changed refuses every call rather than answer with
a config the caller no longer has.

Who may connect: the socket is created ``0600`` (:func:`.._unix_socket.unix_listener`)
in a directory the server's uid owns and no one else may write (else another account could
replace the socket between start and connect), and each connection's peer uid
(``SO_PEERCRED``) must be the server's own -- root's server admits root only -- or it is
sent a refusal and closed before a byte of it is read.

SIGTERM or SIGINT stops it: no new connections, calls in flight get :data:`GRACE_SECONDS`
to finish before they are cancelled, then the runtime is closed and the socket removed;
the exit status is 0. A client that goes away mid-call only loses its own answers.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import signal
import socket
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup

from .._errors import ToolValidationError, UsageError
from .._result import ToolResult
from .._runtime import Runtime
from .._tool import DEFAULT_CONTEXT
from .._unix_socket import peer_uid, unix_listener
from ._jsonl import (
    LINE_OVERHEAD,
    LineError,
    LineReader,
    answer,
    argv_problem,
    error_answer,
    parse_call_line,
)

GRACE_SECONDS = 10.0
"""How long calls in flight may run on after SIGTERM before they are cancelled."""
_logger = logging.getLogger("toolcage.serve")


@dataclass(frozen=True, slots=True)
class Served:
    """What a server serves, for comparing with what a client asks for."""

    config: str | None
    """The config file's resolved path; ``None``: the built-in defaults."""
    cwd: str | None
    """The working directory the defaults resolve against (``None`` with a config file)."""
    approve: bool
    stamp: tuple[int, int, int, int] | None
    """The config file's device, inode, size and modification time when it was loaded."""

    @classmethod
    def at_start(cls, config: str | None, approve: bool) -> Served:
        if config is None:
            return cls(None, os.getcwd(), approve, None)
        return cls(os.path.realpath(config), None, approve, _stamp(config))

    def mismatch(self, hello: object) -> str | None:
        """Why a client's hello does not fit this server, or ``None``."""
        if not isinstance(hello, dict):
            return "hello must be an object"
        if (hello.get("config"), hello.get("cwd")) != (self.config, self.cwd):
            return f"this server serves {self._describe()}, not {_describe(hello)}"
        if hello.get("approve") is not self.approve:
            mode = "with" if self.approve else "without"
            return f"this server runs {mode} --approve; start another for the other setting"
        return self.changed()

    def changed(self) -> str | None:
        """Why the config file is no longer the one served, or ``None``."""
        if self.config is None:
            return None
        try:
            now = _stamp(self.config)
        except OSError as exc:
            now = None
            why = exc.strerror
        else:
            why = "it changed"
        if now != self.stamp:
            return f"the config {self.config}: {why} since the server started; restart it"
        return None

    def _describe(self) -> str:
        return _describe({"config": self.config, "cwd": self.cwd})


def _describe(identity: dict[str, Any]) -> str:
    if identity.get("config") is not None:
        return f"the config {identity['config']}"
    return f"the built-in defaults in {identity.get('cwd')}"


def _stamp(path: str) -> tuple[int, int, int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def check_directory(path: Path) -> None:
    """Refuse a socket path in a directory another uid owns or may write."""
    directory = path.parent
    try:
        info = os.stat(directory)
    except OSError as exc:
        raise UsageError(f"--socket: {directory}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"--socket: {directory} is not a directory")
    if info.st_uid != os.geteuid():
        raise UsageError(f"--socket: {directory} belongs to uid {info.st_uid}, not to this one")
    if info.st_mode & 0o022:
        raise UsageError(
            f"--socket: others may write to {directory} (mode {stat.S_IMODE(info.st_mode):o}); "
            "use a directory only you can write"
        )


@dataclass(slots=True, eq=False)
class _Connection:
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    ended: anyio.Event = field(default_factory=anyio.Event)
    busy: bool = False


class _Server:
    def __init__(self, runtime: Runtime, served: Served, display: Callable[[Any], str]) -> None:
        self._runtime = runtime
        self._served = served
        self._display = display
        self._limit = runtime.config.limits.max_argument_bytes + LINE_OVERHEAD
        self._connections: set[_Connection] = set()
        self._stopping = False

    async def accept(self, listener: socket.socket, group: TaskGroup) -> None:
        listener.setblocking(False)
        while True:
            await anyio.wait_readable(listener)
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:  # out of descriptors, say: this connection, not the server
                if exc.errno in (errno.EMFILE, errno.ENFILE):
                    _logger.warning("cannot accept a connection: %s", exc.strerror)
                    await anyio.sleep(0.1)
                continue
            group.start_soon(self._serve_connection, conn)

    async def stop(self) -> None:
        """Let calls in flight finish (bounded), and end every connection."""
        self._stopping = True
        for connection in self._connections:
            if not connection.busy:
                connection.scope.cancel()
        with anyio.move_on_after(GRACE_SECONDS):
            for connection in list(self._connections):
                await connection.ended.wait()  # each ends after its call (it sees _stopping)
        for connection in self._connections:
            connection.scope.cancel()

    async def _serve_connection(self, conn: socket.socket) -> None:
        connection = _Connection()
        self._connections.add(connection)
        try:
            with conn, connection.scope:
                conn.setblocking(False)
                uid = peer_uid(conn)
                if uid != os.geteuid():
                    _logger.warning(
                        "refused a connection from uid %d",
                        uid,
                        extra={"event": "serve.connection_refused", "uid": uid},
                    )
                    await _write(conn, {"refused": f"peer uid {uid} is not allowed"})
                    return
                await self._lines(conn, connection)
        except OSError:
            pass  # the client went away: its own answers are lost, nothing else
        except Exception:  # one connection's fault never ends the server
            _logger.exception("a connection failed", extra={"event": "serve.connection_failed"})
        finally:
            self._connections.discard(connection)
            connection.ended.set()

    async def _lines(self, conn: socket.socket, connection: _Connection) -> None:
        reader = LineReader(conn.fileno(), self._limit)
        number = 0
        while not self._stopping and (line := await reader.next()) is not None:
            number += 1
            raw, too_long = line
            if not too_long and not raw.strip():
                continue
            if too_long:
                reply = error_answer(LineError(f"the line is over {self._limit:,} bytes"), number)
                await _write(conn, reply)
                continue
            special = _special(raw)
            if special is not None and "hello" in special:
                why = self._served.mismatch(special["hello"])
                await _write(conn, {"refused": why} if why else {"welcome": {"line": number}})
                if why:
                    return
                number -= 1  # the client's own lines count from 1, as with call --jsonl
                continue
            why = self._served.changed()
            if why is not None:
                await _write(conn, {"refused": why})
                return
            connection.busy = True
            try:
                if special is not None:
                    reply = await self._call(special["call"])
                else:
                    reply = await self._jsonl_call(raw, number)
            finally:
                connection.busy = False
            await _write(conn, reply)

    async def _call(self, request: object) -> dict[str, Any]:
        name = request.get("name") if isinstance(request, dict) else None
        arguments = request.get("arguments", "{}") if isinstance(request, dict) else None
        if not isinstance(name, str) or not isinstance(arguments, str):
            problem = ToolValidationError('call must be {"name": NAME, "arguments": "JSON text"}')
            refused = ToolResult.failure(name if isinstance(name, str) else "", problem)
            return {"envelope": refused.envelope(), "display": ""}
        result = argv_problem(name, arguments)  # the in-process call's own check
        if result is None:
            result = await self._runtime.execute(name, arguments)
        return {"envelope": result.envelope(), "display": self._display(result)}

    async def _jsonl_call(self, raw: bytes, number: int) -> dict[str, Any]:
        parsed = parse_call_line(raw)
        if isinstance(parsed, LineError):
            return error_answer(parsed, number)
        call, call_id = parsed
        result = await self._runtime.execute_call(call, DEFAULT_CONTEXT)
        return answer(result.envelope(), call_id, number)


def _special(raw: bytes) -> dict[str, Any] | None:
    """A hello or a ``call`` line, or ``None`` for a ``call --jsonl`` line."""
    if not raw.lstrip().startswith((b'{"hello"', b'{"call"')):
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and len(value) == 1 and value.keys() <= {"hello", "call"}:
        return value
    return None


async def _write(conn: socket.socket, value: dict[str, Any]) -> None:
    try:
        text = json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value).encode()  # a lone surrogate: \u escapes are valid JSON
    except (TypeError, ValueError, RecursionError) as exc:
        text = json.dumps(
            {
                "status": "error",
                "error_type": "execution_error",
                "message": f"the result could not be written as JSON ({type(exc).__name__})",
            }
        ).encode()
    data = memoryview(text + b"\n")
    while data:
        try:
            sent = conn.send(data)
        except BlockingIOError:
            await anyio.wait_writable(conn)
            continue
        data = data[sent:]


async def serve(runtime: Runtime, served: Served, path: Path) -> int:
    """Answer calls on ``path`` until SIGTERM or SIGINT; then close everything, exit 0."""
    check_directory(path)
    server = _Server(runtime, served, lambda result: result.display or "")
    with unix_listener(path) as listener:
        async with runtime, anyio.create_task_group() as group:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                accepting = anyio.CancelScope()

                async def accept() -> None:
                    with accepting:
                        await server.accept(listener, group)

                group.start_soon(accept)
                print(f"toolcage serve: listening on {path}", file=sys.stderr, flush=True)
                async for _ in signals:
                    break
                accepting.cancel()
                with contextlib.suppress(OSError):
                    listener.close()
                await server.stop()
    return 0
