"""Hostile Python in ``python_exec``: every attempt ends in a typed result within its limit,
the host is unharmed and the next call works.

Each case runs through ``Runtime.from_config`` + ``execute`` with the real component. The
host plants a secret outside the mounts (and symlinks to it inside the workspace), listens
on a local port, and carries a canary in its environment; no case may reach any of them.
Two users and two agents (``_cast``): each user's workspace is their own, and the restricted
agent is not granted ``python_exec`` at all.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

from .principals._cast import ADA, ADA_REVIEWER, ADA_WORKER, BOB, BOB_REVIEWER, config_with_agents

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.adversarial,
    pytest.mark.usefixtures("python_exec_compiled"),
]

PLANTED = "TOPPLANTED-5f1c9a2e"
CANARY = "CANARY-7d3b0e41"

LIMITS = """
[tools.python_exec]
timeout = 3
memory_bytes = 134217728
output_bytes = 1048576
"""


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret beside the config's directory, and links to it planted in the workspace."""
    secret_dir = tmp_path / "outside"
    secret_dir.mkdir()
    (secret_dir / "secret.txt").write_text(PLANTED)
    workspace = tmp_path / "cfg" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "dir_link").symlink_to(secret_dir)
    (workspace / "file_link").symlink_to(secret_dir / "secret.txt")
    (workspace / "root_link").symlink_to("/")
    return secret_dir


@asynccontextmanager
async def runtime_of(directory: Path, body: str = LIMITS) -> AsyncIterator[Runtime]:
    async with Runtime.from_config(config_with_agents(directory, body)) as runtime:
        yield runtime


async def run(runtime: Runtime, code: str, ctx: ToolExecutionContext = ADA) -> ToolResult:
    return await runtime.execute("python_exec", {"code": code}, ctx)


def exception(result: ToolResult) -> str:
    assert result.error is not None, result.output_text
    return str((result.error.details or {}).get("exception", ""))


async def still_works(runtime: Runtime) -> None:
    result = await run(runtime, "print('alive')")
    assert result.output_text == "alive", result.output_text


# --- Reading outside the mounts --------------------------------------------------------

ESCAPES = {
    "absolute": "open('{secret}').read()",
    "dotdot-relative": "open('../../outside/secret.txt').read()",
    "dotdot-absolute": "open('/workspace/../../outside/secret.txt').read()",
    "symlinked-dir": "open('dir_link/secret.txt').read()",
    "symlinked-file": "open('file_link').read()",
    "symlinked-root": "open('root_link/etc/passwd').read()",
    "etc-passwd": "open('/etc/passwd').read()",
    "proc-environ": "open('/proc/self/environ', 'rb').read()",
    "proc-listing": "import os\nos.listdir('/proc')",
    "dev-listing": "import os\nos.listdir('/dev')",
    "dev-mem": "open('/dev/mem', 'rb').read(16)",
    "root-listing": "import os\nos.listdir('/')",
    "parent-listing": "import os\nos.listdir('..')",
    "chdir-up": "import os\nos.chdir('/workspace/..')\nos.listdir('.')",
}


class TestMountEscapes:
    @pytest.mark.parametrize("code", list(ESCAPES.values()), ids=list(ESCAPES))
    async def test_nothing_outside_the_mounts_is_reachable(
        self, tmp_path: Path, outside: Path, code: str
    ) -> None:
        async with runtime_of(tmp_path / "cfg") as runtime:
            result = await run(runtime, code.format(secret=outside / "secret.txt"))
            assert result.error is not None, result.output_text
            assert result.error.kind.value == "execution_error"
            assert exception(result).startswith(
                ("FileNotFoundError", "PermissionError", "NotADirectoryError", "OSError")
            ), exception(result)
            assert PLANTED not in result.output_text
            assert "root:" not in result.output_text
            await still_works(runtime)

    async def test_a_symlink_the_code_makes_leads_nowhere(self, tmp_path: Path) -> None:
        code = "import os\nos.symlink('/etc', 'made')\nopen('made/passwd').read()"
        async with runtime_of(tmp_path) as runtime:
            result = await run(runtime, code)
            assert result.is_error
            assert "root:" not in result.output_text
            await still_works(runtime)


# --- Network, processes, native code, environment ---------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A TCP server on 127.0.0.1 that records every connection it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[object] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()
    thread.join(timeout=5)


FORBIDDEN = {
    "dns": "import socket\nsocket.getaddrinfo('example.com', 80)",
    "socket-create": "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_STREAM)",
    "urllib": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:{port}/')",
    "os-system": "import os\nos.system('id')",
    "subprocess": "import subprocess\nsubprocess.run(['id'])",
    "fork": "import os\nos.fork()",
    "posix-spawn": "import os\nos.posix_spawn('/bin/id', ['id'], {{}})",
    "ctypes": "import ctypes\nctypes.CDLL(None)",
    "thread": "import threading\nt = threading.Thread(target=print)\nt.start()",
}


class TestNoWayOut:
    @pytest.mark.parametrize("code", list(FORBIDDEN.values()), ids=list(FORBIDDEN))
    async def test_it_is_refused_and_nothing_is_reached(
        self, tmp_path: Path, listener: tuple[int, list[object]], code: str
    ) -> None:
        port, accepted = listener
        async with runtime_of(tmp_path) as runtime:
            result = await run(runtime, code.format(port=port))
            assert result.error is not None, result.output_text
            assert result.error.kind.value == "execution_error"
            assert exception(result), result.output_text
            await still_works(runtime)
        assert accepted == []

    async def test_no_host_environment_variable_is_visible(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("TOOLCAGE_TEST_CANARY", CANARY)
        async with runtime_of(tmp_path) as runtime:
            result = await run(runtime, "import os\ndict(os.environ)")
        assert result.output_text == "{}"
        assert CANARY not in result.output_text
        assert "TOOLCAGE_TEST_CANARY" in os.environ


# --- Exhaustion ----------------------------------------------------------------------

EXHAUSTION = {
    "infinite-loop": ("while True:\n    pass", "timeout", ""),
    "busy-sleep": ("import time\nwhile True:\n    time.sleep(1)", "timeout", ""),
    "memory-bomb": ("'a' * (1 << 30)", "execution_error", "MemoryError"),
    "memory-creep": (
        "x = []\nwhile True:\n    x.append(bytearray(1 << 20))",
        "execution_error",
        "MemoryError",
    ),
    "deep-recursion": (
        "def f(n):\n    return f(n + 1)\nf(0)",
        "execution_error",
        "RecursionError",
    ),
    "deep-nesting": ("eval('(' * 100_000 + ')' * 100_000)", "execution_error", ""),
    "huge-int-parse": ("int('9' * 1_000_000)", "execution_error", "ValueError"),
    "huge-int-str": ("str(10 ** 100_000)", "execution_error", "ValueError"),
    "huge-power": ("10 ** 10 ** 10", "timeout", ""),
}


class TestExhaustion:
    @pytest.mark.parametrize(
        ("code", "kind", "raised"), list(EXHAUSTION.values()), ids=list(EXHAUSTION)
    )
    async def test_it_ends_in_a_typed_result_and_the_next_call_works(
        self, tmp_path: Path, code: str, kind: str, raised: str
    ) -> None:
        async with runtime_of(tmp_path) as runtime:
            result = await run(runtime, code)
            assert result.error is not None, result.output_text
            assert result.error.kind.value == kind, result.output_text
            if raised:
                assert exception(result).startswith(raised), exception(result)
            await still_works(runtime)

    async def test_ten_megabytes_of_output_are_cut_and_counted(self, tmp_path: Path) -> None:
        body = LIMITS + "truncate_bytes = 2000000\n"  # the reply shows the tool's own note
        async with runtime_of(tmp_path, body) as runtime:
            result = await run(runtime, "print('z' * 10_000_000)")
            assert not result.is_error
            assert result.details == {"stdout_bytes": 10_000_001, "stderr_bytes": 0}
            assert "original size: 10,000,001 bytes" in result.output_text
            await still_works(runtime)


# --- Principals ----------------------------------------------------------------------

PER_USER = (
    LIMITS
    + """
[[mounts.areas]]
host = "users/{user}/workspace"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
create = true
"""
)


class TestPrincipals:
    async def test_each_user_sees_only_their_own_workspace(self, tmp_path: Path) -> None:
        async with runtime_of(tmp_path, PER_USER) as runtime:
            wrote = await run(runtime, f"open('note.txt', 'w').write('{PLANTED}')", ADA)
            assert not wrote.is_error, wrote.output_text
            for code in (
                "open('note.txt').read()",
                "open('/workspace/../../ada/workspace/note.txt').read()",
                "open('../ada/workspace/note.txt').read()",
            ):
                result = await run(runtime, code, BOB)
                assert result.is_error, result.output_text
                assert PLANTED not in result.output_text
            own = await run(runtime, "open('note.txt').read()", ADA)
            assert own.output_text == repr(PLANTED)
        assert (tmp_path / "users" / "ada" / "workspace" / "note.txt").read_text() == PLANTED
        assert not (tmp_path / "users" / "bob" / "workspace" / "note.txt").exists()

    @pytest.mark.parametrize(
        "ctx", [ADA_REVIEWER, BOB_REVIEWER, ADA_WORKER], ids=["ada", "bob", "ada-worker"]
    )
    async def test_the_restricted_agent_is_not_granted_python(
        self, tmp_path: Path, ctx: ToolExecutionContext
    ) -> None:
        async with runtime_of(tmp_path, PER_USER) as runtime:
            result = await run(runtime, "open('x.txt', 'w').write('x')", ctx)
            assert result.error is not None
            assert result.error.kind.value == "not_found"
            assert (await run(runtime, "print('alive')", BOB)).output_text == "alive"
        for user in ("ada", "bob"):
            assert not (tmp_path / "users" / user / "workspace" / "x.txt").exists()
