"""``toolcage mcp --socket PATH``: a Unix socket that lets in only the server's own user.

A tokenless local server needs something a web page cannot forge and another account
cannot borrow; over TCP on loopback there is nothing of the kind, since every local
account reaches 127.0.0.1 (and an MCP client answers its own approval prompts). A Unix
socket has it: the kernel records who connected. So each connection's peer uid is read
with ``SO_PEERCRED`` as uvicorn accepts it, before a byte of it is read, and one from any
uid but the server's effective uid is answered ``403`` and closed (logged as
``mcp.connection_refused``). Root gets no exemption for being root: it can connect as the
server's user when it must, and one rule is easier to reason about than two.

The socket file is also created ``0600`` (the umask is narrowed around ``bind`` so it never
exists with a wider mode), which keeps other accounts from connecting at all; the uid check
is what holds when that mode is loosened, as on the sidecar's socket. The directory is the
operator's choice: a private one (``$XDG_RUNTIME_DIR``) also keeps a squatter from binding
the path first while the server is down.

uvicorn offers no hook between accepting a connection and parsing it, so the check lives
in a subclass of its HTTP/1.1 protocol class (``http=`` of its config takes a class); that
is the one place toolcage leans on uvicorn's protocol module, and
``tests/adversarial/test_mcp_serve.py`` fails if the pinned uvicorn changes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..._errors import UsageError

_logger = logging.getLogger("toolcage.mcp")
_CRED = struct.Struct("3i")
"""``struct ucred``: pid, uid, gid."""


def peer_uid(sock: socket.socket) -> int:
    """The effective uid of the process that connected ``sock`` (at ``connect``)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size)
    return int(_CRED.unpack(creds)[1])


class PeerCheckedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, refusing connections from any uid but ours.

    uvicorn builds one per connection; ``connection_made`` is the first thing it is told,
    so a refused peer never reaches the HTTP parser, let alone the MCP app.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        uid = peer_uid(transport.get_extra_info("socket"))
        if uid == os.geteuid():
            super().connection_made(transport)
            return
        _logger.warning(
            "refused a connection from uid %d",
            uid,
            extra={"event": "mcp.connection_refused", "uid": uid},
        )
        body = f"peer uid {uid} is not allowed\n".encode()
        self.transport = transport  # for connection_lost, which closes it again
        transport.write(
            b"HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(body), body)
        )
        transport.close()


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
