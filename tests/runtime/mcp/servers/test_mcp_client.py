"""MCP servers from ``[[mcp.servers]]`` as tools, called through ``Runtime.from_config``.

The servers are written with the official SDK (``mcp_servers/``) and run as real processes:
stdio servers under real bubblewrap, an HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import ConfigError
from toolcage.policies._config import parse_config
from toolcage.runtime import (
    ProgressUpdate,
    Runtime,
    SafetyTier,
    ToolExecutionContext,
    ToolResult,
)

from ....sidecar.conftest import scratch
from ...mcp_servers import SERVERS, runtime_dirs, server_entry

pytestmark = pytest.mark.anyio

PYTHON = sys.executable
RUNTIME_DIRS = runtime_dirs()


def make_runtime(tmp_path: Path, *servers: dict[str, Any], **raw: Any) -> Runtime:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    config = parse_config({"mcp": {"servers": list(servers)}, **raw}, base_dir=tmp_path)
    return Runtime.from_config(config)


@pytest.fixture
async def basic(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = make_runtime(
        tmp_path,
        server_entry("basic", "basic.py", privileged=["wipe"], hidden=["internal"]),
        approval={"auto_approve": []},
    )
    async with runtime:
        yield runtime


def text(result: ToolResult) -> str:
    return result.output_text


class TestStdioServer:
    async def test_tools_are_called_through_the_pipeline(self, basic: Runtime) -> None:
        result = await basic.execute("basic__echo", {"text": "hi"})
        assert not result.is_error, result.envelope()
        assert text(result) == "echo: hi"

    async def test_camel_case_tool_gets_a_snake_case_name(self, basic: Runtime) -> None:
        result = await basic.execute("basic__add_numbers", {"a": 2, "b": 3})
        assert text(result) == "5"

    async def test_arguments_are_validated_against_the_servers_schema(self, basic: Runtime) -> None:
        result = await basic.execute("basic__add_numbers", {"a": "two", "b": 3})
        assert result.error is not None
        assert result.error.kind.value == "validation_error"

    async def test_progress_reaches_the_callers_context(self, basic: Runtime) -> None:
        updates: list[ProgressUpdate] = []
        context = ToolExecutionContext(progress=updates.append)
        result = await basic.execute("basic__count", {}, context)
        assert text(result) == "counted"
        assert [(u.message, u.fraction) for u in updates] == [("step 1", 0.5), ("step 2", 1.0)]

    async def test_tool_error_is_an_execution_error(self, basic: Runtime) -> None:
        result = await basic.execute("basic__fail", {})
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "fail" in result.error.message


class TestTiers:
    async def test_tier_from_annotations(self, basic: Runtime) -> None:
        tiers = {tool.schema().name: tool.safety_tier for tool in basic.registry}
        assert tiers["basic__echo"] is SafetyTier.READ_ONLY
        assert tiers["basic__add_numbers"] is SafetyTier.SIDE_EFFECTING

    async def test_operator_raises_a_read_only_tool_to_privileged(self, basic: Runtime) -> None:
        tiers = {tool.schema().name: tool.safety_tier for tool in basic.registry}
        assert tiers["basic__wipe"] is SafetyTier.PRIVILEGED
        result = await basic.execute("basic__wipe", {})
        assert result.error is not None
        assert result.error.kind.value == "permission_denied"

    async def test_operator_hides_a_tool(self, basic: Runtime) -> None:
        assert "basic__internal" not in basic.registry
        result = await basic.execute("basic__internal", {})
        assert result.error is not None
        assert result.error.kind.value == "not_found"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [PYTHON, str(SERVERS / "basic.py"), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:  # poll until it listens (the per-test timeout bounds this)
            assert process.poll() is None, "the HTTP server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                threading.Event().wait(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait()


class TestHttpServer:
    async def test_tools_of_an_http_server(self, tmp_path: Path, http_server: str) -> None:
        runtime = make_runtime(tmp_path, {"name": "remote", "url": http_server})
        async with runtime:
            result = await runtime.execute("remote__echo", {"text": "over http"})
            assert text(result) == "echo: over http"
            tiers = {tool.schema().name: tool.safety_tier for tool in runtime.registry}
            assert tiers["remote__echo"] is SafetyTier.READ_ONLY


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


class TestSandbox:
    async def test_files_outside_the_grants_are_not_visible(self, tmp_path: Path) -> None:
        outside = tmp_path / "outside.txt"
        outside.write_text("secret", encoding="utf-8")
        granted = scratch("granted-")  # a root runtime's server runs as nobody: reachable
        granted.chmod(0o755)
        (granted / "ok.txt").write_text("visible", encoding="utf-8")
        runtime = make_runtime(
            tmp_path,
            server_entry("probe", "probe.py", read_only=[*RUNTIME_DIRS, str(granted)]),
        )
        async with runtime:
            ok = await runtime.execute("probe__read", {"path": str(granted / "ok.txt")})
            assert text(ok) == "read: visible"
            for path in (str(outside), "/etc/hostname"):
                result = await runtime.execute("probe__read", {"path": path})
                assert text(result).startswith("refused:"), (path, text(result))

    async def test_network_is_refused_unless_granted(self, tmp_path: Path) -> None:
        listener = Listener()
        try:
            runtime = make_runtime(tmp_path, server_entry("probe", "probe.py"))
            async with runtime:
                result = await runtime.execute("probe__connect", {"port": listener.port})
                assert text(result).startswith("refused:")
            assert listener.accepted == 0
            granted = make_runtime(tmp_path, server_entry("probe", "probe.py", network=True))
            async with granted:
                result = await granted.execute("probe__connect", {"port": listener.port})
                assert text(result) == "connected"
        finally:
            listener.close()

    async def test_unsandboxed_server_sees_the_host(self, tmp_path: Path) -> None:
        outside = tmp_path / "outside.txt"
        outside.write_text("host file", encoding="utf-8")
        runtime = make_runtime(tmp_path, server_entry("probe", "probe.py", sandbox=False))
        async with runtime:
            result = await runtime.execute("probe__read", {"path": str(outside)})
            assert text(result) == "read: host file"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class TestFailures:
    async def test_crash_is_an_execution_error_then_it_restarts(self, tmp_path: Path) -> None:
        runtime = make_runtime(tmp_path, server_entry("faulty", "faulty.py"))
        async with runtime:
            first = text(await runtime.execute("faulty__instance", {}))
            crashed = await runtime.execute("faulty__crash", {})
            assert crashed.error is not None
            assert crashed.error.kind.value == "execution_error"
            second = await runtime.execute("faulty__instance", {})
            assert not second.is_error, second.envelope()
            assert text(second) != first

    async def test_hang_times_out_then_it_is_killed_and_restarted(self, tmp_path: Path) -> None:
        runtime = make_runtime(
            tmp_path,
            server_entry("faulty", "faulty.py", sandbox=False),
            tools={"faulty__hang": {"timeout": 0.5}},
        )
        async with runtime:
            pid = int(text(await runtime.execute("faulty__pid", {})))
            hung = await runtime.execute("faulty__hang", {})
            assert hung.error is not None
            assert hung.error.kind.value == "timeout"
            # killed, not abandoned: poll the kernel (the per-test timeout bounds this)
            while pid_alive(pid):  # noqa: ASYNC110
                await anyio.sleep(0.05)
            again = await runtime.execute("faulty__pid", {})
            assert not again.is_error, again.envelope()
            assert int(text(again)) != pid

    async def test_servers_stop_with_the_runtime(self, tmp_path: Path) -> None:
        runtime = make_runtime(tmp_path, server_entry("faulty", "faulty.py", sandbox=False))
        async with runtime:
            pid = int(text(await runtime.execute("faulty__pid", {})))
        assert not pid_alive(pid)


class TestToolListChanged:
    async def test_removed_tool_is_refused_after_the_announcement(self, tmp_path: Path) -> None:
        runtime = make_runtime(tmp_path, server_entry("changing", "changing.py"))
        async with runtime:
            assert text(await runtime.execute("changing__old", {})) == "old"
            assert text(await runtime.execute("changing__retire", {})) == "retired"
            while True:  # the refresh runs when the notification arrives
                result = await runtime.execute("changing__old", {})
                if result.error is not None and result.error.kind.value == "not_found":
                    break
                await anyio.sleep(0.05)
            assert "no longer offers" in result.error.message


class TestConfig:
    @pytest.mark.parametrize(
        ("entry", "message"),
        [
            ({"name": "x"}, "exactly one of command and url"),
            ({"name": "x", "command": ["a"], "url": "http://127.0.0.1/"}, "exactly one"),
            ({"name": "a__b", "command": ["a"]}, "snake_case"),
            ({"name": "x", "url": "ftp://127.0.0.1/"}, "http://"),
            ({"name": "x", "command": ["a"], "sandboxed": True}, "unknown key"),
            ({"name": "x", "command": ["a"], "processes": 2}, "processes"),
            ({"name": "x", "command": ["a"], "cpu_seconds": 0}, "cpu_seconds"),
            ({"name": "x", "command": ["a"], "sandbox_uid": 0}, "sandbox_uid"),
            ({"name": "x", "command": ["a"], "message_bytes": 1024}, "message_bytes"),
            ({"name": "x", "command": ["a"], "list_pages": 0}, "list_pages"),
        ],
    )
    def test_bad_entries_name_their_key_path(
        self, tmp_path: Path, entry: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(ConfigError, match=message) as info:
            parse_config({"mcp": {"servers": [entry]}}, base_dir=tmp_path)
        assert "mcp.servers.0" in str(info.value)

    @pytest.mark.skipif(os.geteuid() != 0, reason="servers change uid only under root")
    async def test_a_grant_the_sandbox_uid_cannot_reach_is_named(self, tmp_path: Path) -> None:
        private = scratch("private-")  # 0700, root's
        (private / "data").mkdir()
        entry = server_entry("basic", "basic.py", read_only=[*RUNTIME_DIRS, str(private / "data")])
        async with make_runtime(tmp_path, entry) as runtime:
            result = await runtime.execute("basic__echo", {"text": "hi"})
        assert result.error is not None
        assert (
            f"uid 65534 (sandbox_uid, since the runtime runs as root) cannot reach "
            f"{private / 'data'}: {private} is not searchable for it (mode 0700)"
        ) in result.error.message

    async def test_server_that_does_not_start_is_unavailable(self, tmp_path: Path) -> None:
        entry = {"name": "gone", "command": ["/nonexistent/server"], "sandbox": False}
        async with make_runtime(tmp_path, entry) as runtime:
            result = await runtime.execute("gone__anything", {})
        assert result.error is not None
        assert result.error.kind.value == "execution_error"
        assert "MCP server 'gone' did not start" in result.error.message
        assert "command: /nonexistent/server" in result.error.message
