"""The runtime's side of the socket: requests in, results or errors out, never a hang.

Each request takes a connection of its own (idle ones are pooled), so a request's fate is
its connection's: when the daemon dies mid-command the connection reaches end of file at
once and the caller gets :class:`SidecarLost` -- the next request finds the daemon gone,
has the launcher start a new one and goes through. A request cancelled by its caller
closes its connection, which makes the daemon kill the command.

>>> async with SidecarClient(SidecarLauncher(config)) as client:     # doctest: +SKIP
...     result = await client.request("exec", session="s", command="pwd", timeout=5)
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio

from ._launcher import SidecarLauncher, SidecarUnavailable
from ._protocol import FrameStream, ProtocolError, hello

HANDSHAKE_SECONDS = 10.0
HEALTH_SECONDS = 2.0
"""A healthy daemon answers a ping at once, however busy its commands keep it."""


class SidecarError(Exception):
    """The daemon answered with an error (``code`` as on the wire)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class SidecarLost(Exception):
    """The connection ended before the answer came: the daemon died or was killed."""


class SidecarClosed(SidecarLost):
    """The answer never came because the client was closed (its daemon stopped with it)."""


class _Connection:
    def __init__(self, frames: FrameStream, generation: int) -> None:
        self.frames = frames
        self.generation = generation


class SidecarClient:
    """Talks to the daemon that ``launcher`` runs (or to a fixed ``socket_path``)."""

    def __init__(
        self,
        launcher: SidecarLauncher | None = None,
        *,
        socket_path: Path | None = None,
        max_idle: int = 8,
    ) -> None:
        if (launcher is None) == (socket_path is None):
            raise ValueError("give either a launcher or a socket path")
        self.launcher = launcher
        self.socket_path = socket_path
        self.max_idle = max_idle
        self._idle: list[_Connection] = []
        self._ids = itertools.count(1)
        self.closed = False
        """Set by :meth:`aclose`; a request cut off by it raises :class:`SidecarClosed`."""

    async def request(self, op: str, **arguments: Any) -> dict[str, Any]:
        """Send one request and return its response (``ok`` true), or raise."""
        message_id = next(self._ids)
        message = {"id": message_id, "op": op, **arguments}
        for attempt in range(2):
            connection = await self._checkout()
            try:
                await connection.frames.send(message)
                break
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                # nothing reached the daemon, so trying once more cannot run anything twice
                await self._discard(connection)
                if attempt:
                    raise SidecarLost("the shell sidecar refused the request") from None
        try:
            response = await connection.frames.receive()
        except ProtocolError as exc:
            await self._discard(connection)
            raise SidecarLost(f"the shell sidecar sent a bad frame: {exc}") from None
        except BaseException:
            await self._discard(connection)  # the daemon kills what this request started
            raise
        if response is None:
            await self._discard(connection)
            if self.closed:
                raise SidecarClosed("the shell sidecar was closed, and the command stopped")
            raise SidecarLost(
                "the shell sidecar stopped before answering (it is restarted on the next call)"
            )
        if response.get("id") != message_id:
            await self._discard(connection)
            raise SidecarLost("the shell sidecar answered out of step")
        await self._checkin(connection)
        if not response.get("ok"):
            problem = response.get("error") or {}
            raise SidecarError(str(problem.get("code")), str(problem.get("message")))
        return response

    async def ping(self) -> dict[str, Any]:
        """A round trip to the daemon (starting it if need be): the health check."""
        return await self.request("ping")

    async def check_health(self, seconds: float = HEALTH_SECONDS) -> bool:
        """Ping the daemon; if it does not answer in time, restart it. Whether it answered."""
        try:
            with anyio.fail_after(seconds):
                await self.ping()
        except (TimeoutError, SidecarLost, SidecarError, SidecarUnavailable, OSError):
            if self.launcher is not None:
                await self.launcher.restart(self.launcher.generation, kill=True)
            return False
        return True

    async def _checkout(self) -> _Connection:
        socket_path, generation = await self._target()
        while self._idle:
            connection = self._idle.pop()
            if connection.generation == generation:
                return connection
            await connection.frames.aclose()
        try:
            return await self._connect(socket_path, generation)
        except (OSError, SidecarLost):
            if self.launcher is None:
                raise SidecarUnavailable(
                    f"cannot reach the shell sidecar at {socket_path}"
                ) from None
        await self.launcher.restart(generation)
        socket_path, generation = await self._target()
        try:
            return await self._connect(socket_path, generation)
        except (OSError, SidecarLost) as exc:
            raise SidecarUnavailable(f"cannot reach the shell sidecar: {exc}") from None

    async def _target(self) -> tuple[Path, int]:
        if self.launcher is not None:
            return await self.launcher.ensure()
        return self.socket_path or Path(), 0

    async def _connect(self, socket_path: Path, generation: int) -> _Connection:
        stream = await anyio.connect_unix(socket_path)
        frames = FrameStream(stream)
        try:
            with anyio.fail_after(HANDSHAKE_SECONDS):
                await frames.send(hello())
                reply = await frames.receive()
        except (TimeoutError, ProtocolError, anyio.BrokenResourceError) as exc:
            await frames.aclose()
            raise SidecarLost(f"no handshake: {exc}") from None
        except BaseException:
            await frames.aclose()
            raise
        if reply is None:  # a daemon on its way out: the caller restarts it
            await frames.aclose()
            raise SidecarLost("the connection closed during the handshake")
        if reply.get("type") != "hello":
            await frames.aclose()
            problem = reply.get("error") or {}
            raise SidecarUnavailable(
                f"the shell sidecar refused the connection: {problem.get('message', 'no hello')}"
            )
        return _Connection(frames, generation)

    async def _checkin(self, connection: _Connection) -> None:
        if len(self._idle) < self.max_idle:
            self._idle.append(connection)
        else:
            await self._discard(connection)

    async def _discard(self, connection: _Connection) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await connection.frames.aclose()

    async def aclose(self) -> None:
        """Close the connections and stop the daemon this client's launcher started."""
        self.closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await self._discard(connection)
        if self.launcher is not None:
            await self.launcher.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
