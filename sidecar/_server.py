"""The daemon's socket: a private directory, peer checks, frames in, responses out.

The socket lives in a directory only the daemon's user can enter (``0700``, refused if it
is anyone else's or open to others) and is itself ``0600``; on top of that every
connection's peer uid is read with ``SO_PEERCRED`` and compared with the allowed ones
before a byte of it is parsed. A connection then speaks :mod:`._protocol`; a protocol
error is answered with an error frame, and nothing a peer sends ends the daemon.

Every command an ``exec`` brings, foreground or background, is checked here against the
shell policy the daemon was started with (built from the operator's ``[shell]`` section,
never from anything a peer sends) before a sandbox is started for it; a refusal answers
with the error code ``policy`` (:data:`._protocol.POLICY_REFUSED`). A peer that skips the
runtime and speaks to the socket directly meets the same policy.

Each request's ``user`` and ``agent`` say whose workspace it works in when the workspace
names the principal; the service keeps sessions and jobs per owner (:mod:`._workspaces`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup, TaskStatus
from toolcage.policies import ShellPolicyViolation

from ._protocol import POLICY_REFUSED, PROTOCOL, VERSION, FrameStream, ProtocolError, error
from ._service import ServiceError, ShellService
from ._workspaces import Owner

logger = logging.getLogger("toolcage.sidecar")


class CommandCheck(Protocol):
    """Decides whether a command may run: returns to allow, raises
    :class:`~toolcage.policies.ShellPolicyViolation` to refuse (a
    :class:`~toolcage.policies.ShellPolicy` is one)."""

    def check(self, command: str) -> object: ...


class UnsafeUncheckedCommands:
    """Lets every command through: for testing the sandbox on its own, never for use.

    The daemon takes it only from its own command line (``--unsafe-skip-policy``) and logs a
    warning when it does.
    """

    def check(self, command: str) -> object:
        return None


HELLO_SECONDS = 10.0
MAX_COMMAND_BYTES = 100 * 1024
"""Linux caps one argument at 128 KiB; the command travels as one."""
_CRED = struct.Struct("3i")

Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class SocketSetupError(RuntimeError):
    """The socket path is unsafe or taken."""


def prepare_socket_path(path: Path) -> None:
    """Make sure ``path``'s directory is private to us and no live socket is there."""
    directory = path.parent
    if not directory.exists():
        directory.mkdir(mode=0o700, parents=True)
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise SocketSetupError(f"{directory} is not a directory")
    if info.st_uid != os.getuid():
        raise SocketSetupError(f"{directory} belongs to uid {info.st_uid}, not to us")
    if info.st_mode & 0o077:
        raise SocketSetupError(
            f"{directory} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); "
            "the socket needs a private (0700) directory"
        )
    try:
        existing = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(existing.st_mode):
        raise SocketSetupError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        path.unlink()  # a stale socket from a daemon that died
    else:
        raise SocketSetupError(f"another sidecar is listening on {path}")
    finally:
        probe.close()


def listen_unix(path: Path) -> socket.socket:
    """A listening socket at ``path``, mode ``0600`` from its creation.

    Bound here, on the caller's thread: anyio's ``create_unix_listener`` binds in a worker
    thread, which then stays for the daemon's life -- and every uid switch around a
    command's start (:mod:`._child`) has glibc interrupt each thread of the process.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        sock.listen(128)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def peer_uid(stream: SocketStream) -> int:
    raw = stream.extra(SocketAttribute.raw_socket)  # noqa: S610 - anyio's typed attributes
    creds = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    _, uid, _ = _CRED.unpack(creds)
    return int(uid)


class SidecarServer:
    """Serves one :class:`ShellService` on a Unix socket."""

    def __init__(
        self,
        service: ShellService,
        socket_path: Path,
        *,
        allowed_uids: frozenset[int],
        mode: str,
        policy: CommandCheck,
    ) -> None:
        self.service = service
        self.socket_path = socket_path
        self.allowed_uids = allowed_uids
        self.mode = mode
        self.policy = policy
        """Every command is checked against it before it runs."""
        self.workspace_writable: bool | None = None
        """Whether commands may write in the shared workspace (found by the startup
        probe); ``None`` when each principal has a workspace of its own."""
        self.ops: dict[str, Handler] = {
            "ping": self._ping,
            "open": self._open,
            "close": self._close,
            "exec": self._exec,
            "poll": self._poll,
            "kill": self._kill,
        }

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        prepare_socket_path(self.socket_path)
        listener = await SocketListener.from_socket(listen_unix(self.socket_path))
        try:
            async with listener, anyio.create_task_group() as tg:
                self.service.jobs_group = tg
                if self.service.boxes is not None:
                    tg.start_soon(self.service.boxes.sweep_idle)
                task_status.started()
                await listener.serve(self._connection, task_group=tg)
        finally:
            with anyio.CancelScope(shield=True):
                await self.service.shutdown()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()

    async def _connection(self, stream: SocketStream) -> None:
        try:
            await self._converse(stream)
        except Exception:  # a connection's failure never ends the daemon
            logger.exception("connection failed", extra={"event": "sidecar.connection_failed"})

    async def _converse(self, stream: SocketStream) -> None:
        async with stream:
            frames = FrameStream(stream)
            uid = peer_uid(stream)
            if uid not in self.allowed_uids:
                logger.warning(
                    "refused a connection from uid %d",
                    uid,
                    extra={"event": "sidecar.connection_refused", "uid": uid},
                )
                await _send(frames, error("forbidden", f"peer uid {uid} is not allowed"))
                return
            if not await self._handshake(frames):
                return
            async with anyio.create_task_group() as requests:
                requests.start_soon(self._requests, frames, requests)

    async def _requests(self, frames: FrameStream, requests: TaskGroup) -> None:
        """Read the next request and answer it, while a new task of this kind reads on.

        Each request is answered in the task that read it -- with no hand-off to another
        task before it starts -- and requests still overlap: the next one is read by a task
        started for it as soon as this one first waits (starting a task costs more than a
        short request, so it is left to the event loop's next turn). At the end of the
        stream the connection's requests are cancelled, which kills the commands they
        started.
        """
        while True:
            try:
                message = await frames.receive()
            except ProtocolError as exc:
                await _send(frames, error(exc.code, exc.message))
                if exc.fatal:
                    break
                continue
            if message is None:
                break
            asyncio.get_running_loop().call_soon(
                requests.start_soon, self._requests, frames, requests
            )
            await self._dispatch(frames, message)
            return
        # the client is gone: whatever it was waiting for is killed
        requests.cancel_scope.cancel()

    async def _handshake(self, frames: FrameStream) -> bool:
        try:
            with anyio.fail_after(HELLO_SECONDS):
                first = await frames.receive()
        except TimeoutError:
            await _send(frames, error("bad_hello", "no hello frame in time"))
            return False
        except ProtocolError as exc:
            await _send(frames, error(exc.code, exc.message))
            return False
        if first is None:
            return False
        if first.get("type") != "hello" or first.get("protocol") != PROTOCOL:
            await _send(frames, error("bad_hello", f"expected a {PROTOCOL!r} hello frame"))
            return False
        if first.get("version") != VERSION:
            message = f"protocol version {first.get('version')!r} is not supported"
            await _send(frames, error("unsupported_version", f"{message} (this is {VERSION})"))
            return False
        reply = {"type": "hello", "version": VERSION, "pid": os.getpid(), "mode": self.mode}
        return await _send(frames, reply)

    async def _dispatch(self, frames: FrameStream, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        try:
            if not isinstance(request_id, int) or isinstance(request_id, bool):
                request_id = None
                raise ServiceError("bad_request", "a request needs an integer 'id'")
            handler = self.ops.get(str(message.get("op")))
            if handler is None:
                raise ServiceError("unknown_op", f"unknown op {message.get('op')!r}")
            response = {"id": request_id, "ok": True, **await handler(message)}
        except ServiceError as exc:
            response = error(exc.code, exc.message, request_id)
        except Exception as exc:
            op = str(message.get("op"))
            logger.exception(
                "request %r failed", op, extra={"event": "sidecar.request_failed", "op": op}
            )
            response = error("internal", f"{type(exc).__name__}: {exc}", request_id)
        await _send(frames, response)

    # -- operations -----------------------------------------------------------------------

    async def _ping(self, message: dict[str, Any]) -> dict[str, Any]:
        return {
            "sessions": len(self.service.sessions),
            "jobs": len(self.service.jobs),
            "workspace_writable": self.workspace_writable,
        }

    def _owner(self, message: dict[str, Any]) -> Owner:
        """Whose workspace the request is for (``()``: the shared one)."""
        try:
            return self.service.workspaces.owner(message.get("user"), message.get("agent"))
        except ValueError as exc:
            raise ServiceError("bad_request", str(exc)) from None

    async def _open(self, message: dict[str, Any]) -> dict[str, Any]:
        owner = self._owner(message)
        session, created = self.service.open(_text(message, "session", 256), owner)
        return {"cwd": self.service.guest_cwd(session), "created": created}

    async def _close(self, message: dict[str, Any]) -> dict[str, Any]:
        owner = self._owner(message)
        await self.service.close(_text(message, "session", 256), owner)
        return {}

    async def _exec(self, message: dict[str, Any]) -> dict[str, Any]:
        limits = self.service.limits
        owner = self._owner(message)
        session = _text(message, "session", 256)
        command = _text(message, "command", MAX_COMMAND_BYTES)
        try:
            self.policy.check(command)
        except ShellPolicyViolation as exc:
            raise ServiceError(POLICY_REFUSED, str(exc)) from None
        output_bytes = int(
            _number(message, "output_bytes", limits.output_bytes, 1, limits.output_bytes)
        )
        if message.get("background", False) is True:
            return await self.service.start_job(session, command, output_bytes, owner)
        timeout = _number(message, "timeout", limits.timeout, 0.001, limits.max_timeout)
        return await self.service.exec(session, command, timeout, output_bytes, owner)

    async def _poll(self, message: dict[str, Any]) -> dict[str, Any]:
        wait = _number(message, "wait", 0.0, 0.0, 60.0)
        owner = self._owner(message)
        session = _text(message, "session", 256)
        return await self.service.poll(_text(message, "job", 64), session, wait, owner)

    async def _kill(self, message: dict[str, Any]) -> dict[str, Any]:
        owner = self._owner(message)
        session = _text(message, "session", 256)
        return await self.service.kill(_text(message, "job", 64), session, owner)


async def _send(frames: FrameStream, message: dict[str, Any]) -> bool:
    try:
        try:
            await frames.send(message)
        except ValueError as exc:  # larger than a frame may be
            await frames.send(error("response_too_large", str(exc), message.get("id")))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return False
    return True


def _text(message: dict[str, Any], key: str, limit: int) -> str:
    value = message.get(key)
    if not isinstance(value, str) or not value or len(value.encode()) > limit:
        raise ServiceError(
            "bad_request", f"{key!r} must be a non-empty string of at most {limit} bytes"
        )
    if "\x00" in value:
        raise ServiceError("bad_request", f"{key!r} must not contain NUL")
    return value


def _number(message: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = message.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ServiceError("bad_request", f"{key!r} must be a number from {low:g} to {high:g}")
    return float(value)
