"""Unix sockets of the runtime's own servers, with the standard library only.

:func:`unix_listener` binds a socket ``0600`` from its creation (the umask is narrowed
around ``bind``, so it never exists with a wider mode), replaces a stale one left by a
server that died and removes its own on exit; :func:`peer_uid` asks the kernel who
connected (``SO_PEERCRED``). ``toolcage mcp --socket`` (:mod:`.mcp.serve._socket`),
``toolcage serve`` and the client of ``toolcage call --server`` (:mod:`.cli`) use them;
the client must stay light, hence a module of its own.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

from ._errors import UsageError

_CRED = struct.Struct("3i")
"""``struct ucred``: pid, uid, gid."""


def peer_uid(sock: socket.socket) -> int:
    """The effective uid of the process that connected ``sock`` (at ``connect``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    return int(_CRED.unpack(creds)[1])


@contextlib.contextmanager
def unix_listener(path: Path) -> Iterator[socket.socket]:
    """A listening socket at ``path``, ``0600`` from its creation, removed on exit if it is
    still ours; a stale socket file left by a server that died is replaced, a live one or
    any other file is a :class:`UsageError`."""
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old_umask = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old_umask)
        sock.listen(128)  # clients that connect before uvicorn starts wait in the backlog
        bound = os.lstat(path)
    except OSError as exc:
        sock.close()
        raise UsageError(f"--socket: cannot bind {path}: {exc.strerror or exc}") from None
    try:
        yield sock
    finally:
        sock.close()
        with contextlib.suppress(OSError):
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) == (bound.st_dev, bound.st_ino):
                path.unlink()


def _clear_stale(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"--socket: {path}: {exc.strerror}") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise UsageError(f"--socket: {path} exists and is not a socket")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # nobody listens: left by a server that died
            return
    raise UsageError(f"--socket: another server is listening on {path}")
