"""``toolcage mcp --socket PATH``: a Unix socket that lets in only the server's own user.

A tokenless local server needs something a web page cannot forge and another account
cannot borrow; over TCP on loopback there is nothing of the kind, since every local
account reaches 127.0.0.1 (and an MCP client answers its own approval prompts). A Unix
socket has it: the kernel records who connected. So each connection's peer uid is read
with ``SO_PEERCRED`` as uvicorn accepts it, before a byte of it is read, and one from any
uid but the server's effective uid is answered ``403`` and closed (logged as
``mcp.connection_refused``). Root gets no exemption for being root: it can connect as the
server's user when it must, and one rule is easier to reason about than two.

The socket file is also created ``0600`` (:func:`..._unix_socket.unix_listener`: it never
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
import logging
import os

from uvicorn.protocols.http.h11_impl import H11Protocol

from ..._unix_socket import peer_uid

_logger = logging.getLogger("toolcage.mcp")


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
