"""Who reaches ``toolcage mcp``: the operator's clients, and no other local account.

Whoever reaches the server calls every tool it serves and answers its approval prompts
(elicitation asks the calling client), so a tokenless server on loopback handed privileged
calls to every account of the machine. Each case here is a way in that the command must
refuse: a tokenless ``--http`` on each spelling of loopback, the unsafe switch beyond
loopback, and another uid on the Unix socket -- kept out by the file's mode and, with the
mode opened up, by its credentials (``SO_PEERCRED``) before any MCP message is read. All run
``toolcage mcp`` as a real process and speak to it with the official MCP client.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from ..runtime.cli.test_cli import COMMAND
from ..runtime.mcp.serve.test_mcp_server import (
    env_without_token,
    http_session,
    served,
    socket_session,
)
from ..sidecar.conftest import scratch

pytestmark = pytest.mark.adversarial

NOBODY = 65534
as_root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")


def refused_command(*args: str, env: dict[str, str] | None = None) -> str:
    """Run ``toolcage mcp ARGS``, which must refuse to start; its stderr."""
    done = subprocess.run(
        [*COMMAND, "mcp", *args],
        capture_output=True,
        text=True,
        env=env_without_token() if env is None else env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


class TestHttpNeedsAToken:
    # every spelling of loopback: each is reachable by every account of the machine
    @pytest.mark.parametrize("address", ["127.0.0.1:0", "0", "localhost:0", "[::1]:0"])
    def test_tokenless_http_is_refused_and_names_the_ways_out(self, address: str) -> None:
        stderr = refused_command("--http", address)
        assert "--http needs a bearer token" in stderr
        for way_out in ("TOOLCAGE_MCP_TOKEN", "--socket PATH", "--unsafe-no-token"):
            assert way_out in stderr

    # the unsafe switch opens loopback only, and never overrides a token that is set
    @pytest.mark.parametrize(
        ("address", "token", "expected"),
        [
            ("0.0.0.0:0", None, "serving on 0.0.0.0 needs a bearer token"),
            ("[::]:0", None, "serving on :: needs a bearer token"),
            ("127.0.0.1:0", "s3cret", "a bearer token is set"),
        ],
    )
    def test_unsafe_no_token_does_not_reach_further(
        self, address: str, token: str | None, expected: str
    ) -> None:
        env = env_without_token()
        if token is not None:
            env["TOOLCAGE_MCP_TOKEN"] = token
        assert expected in refused_command("--http", address, "--unsafe-no-token", env=env)

    @pytest.mark.anyio
    async def test_unsafe_no_token_serves_loopback_and_says_it_is_unsafe(
        self, tmp_path: Path
    ) -> None:
        with served(tmp_path, "--http", "127.0.0.1:0", "--unsafe-no-token") as server:
            async with http_session(server.url) as session:
                tools = (await session.list_tools()).tools
        warning = "".join(server.before)
        assert "WARNING mcp.unsafe_no_token: UNSAFE: --unsafe-no-token" in warning
        assert server.url in warning
        assert tools


@as_root_only
class TestTheSocketAdmitsOnlyItsUser:
    def test_another_uid_cannot_even_reach_the_socket(self) -> None:
        path = reachable_socket_path()
        with served(path.parent, "--socket", str(path)):
            outcome = as_uid(NOBODY, raw_exchange(path))
        assert outcome == "failed: PermissionError", outcome

    def test_another_uid_is_refused_by_its_credentials(self) -> None:
        path = reachable_socket_path()
        with served(path.parent, "--socket", str(path)) as server:
            path.chmod(0o666)  # only SO_PEERCRED stands in the way now
            as_us = list_tools_over(path)  # loads what the client needs before the fork
            raw = as_uid(NOBODY, raw_exchange(path))
            official = as_uid(NOBODY, lambda: list_tools_over(path))
            again = list_tools_over(path)
            status = server.stop()
        assert as_us.startswith("listed "), as_us
        assert raw.startswith("HTTP/1.1 403 Forbidden\r\n"), raw
        assert raw.endswith(f"peer uid {NOBODY} is not allowed\n")
        assert official.startswith("failed: "), official
        assert again == as_us
        assert status == 0
        refusals = server.stderr.count(f"refused a connection from uid {NOBODY}")
        assert refusals >= 2, server.stderr
        assert "mcp.connection_refused" in server.stderr
        assert "Traceback" not in server.stderr


def reachable_socket_path() -> Path:
    """A socket path in a directory any uid may pass through (but not list)."""
    directory = scratch("mcp-socket-")
    directory.chmod(0o711)
    (directory / "workspace").mkdir()
    return directory / "mcp.sock"


def raw_exchange(path: Path) -> Callable[[], str]:
    """Connect to ``path`` and read what the server says, sending nothing."""

    def exchange() -> str:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(str(path))
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    return exchange


def list_tools_over(path: Path) -> str:
    """The official client on the socket: what it listed, or how it failed."""

    async def listed() -> str:
        async with socket_session(path) as session:
            return f"listed {len((await session.list_tools()).tools)} tools"

    return outcome_of(lambda: anyio.run(listed))


def outcome_of(action: Callable[[], str]) -> str:
    try:
        return action()
    except Exception as exc:  # the outcome is what is asserted
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
            cause = cause.exceptions[0]
        return f"failed: {type(cause).__name__}"


def as_uid(uid: int, action: Callable[[], str]) -> str:
    """``action`` in a forked child that has become ``uid``; its outcome as text."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            with contextlib.suppress(OSError):
                os.write(write_fd, outcome_of(action).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()
