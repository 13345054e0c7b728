"""MCP servers that do not start, or die between calls, through the doors users use:
``Runtime.from_config`` + ``execute``, the ``toolcage`` command, and the MCP client's hub.

A server that does not start says why (its exit status, its command, the redacted tail of
its stderr) and takes only its own tools down; it is started again on a fixed backoff
schedule, and its tools appear once it starts. A server killed between calls is started
again before the next call, which succeeds. Servers are real processes on the official SDK,
sandboxed unless a test says otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import McpServerConfig, Redactor
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, ToolResult
from toolcage.runtime.mcp.servers._hub import McpHub

from ....sidecar.conftest import give_to_sandbox, processes_running, scratch
from ...mcp_servers import server_entry

pytestmark = pytest.mark.anyio

# the README's example before it named a venv: no `python` on the sandbox's PATH
BARE_PYTHON = {"name": "notes", "command": ["python", "-m", "notes_server"]}


def make_runtime(tmp_path: Path, *servers: dict[str, Any], **raw: Any) -> Runtime:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    config = parse_config({"mcp": {"servers": list(servers)}, **raw}, base_dir=tmp_path)
    return Runtime.from_config(config)


def ready_directory() -> Path:
    """A directory the flaky server looks for its ready file in, visible to its uid."""
    directory = scratch("flaky-")
    directory.chmod(0o755)
    give_to_sandbox(directory)
    return directory


def flaky(directory: Path, **extra: Any) -> dict[str, Any]:
    entry = server_entry("flaky", "flaky.py", str(directory / "ready"), **extra)
    entry["read_only"] = [*entry["read_only"], str(directory)]
    return entry


def error_of(result: ToolResult) -> tuple[str, str, dict[str, Any]]:
    assert result.error is not None, result.envelope()
    return result.error.kind.value, result.error.message, result.error.details or {}


def text(result: ToolResult) -> str:
    assert not result.is_error, result.envelope()
    return result.output_text


class TestStartFailure:
    async def test_a_missing_interpreter_is_named_with_status_command_and_stderr(
        self, tmp_path: Path
    ) -> None:
        async with make_runtime(tmp_path, BARE_PYTHON) as runtime:
            kind, message, details = error_of(await runtime.execute("notes__search", {}))
        assert kind == "execution_error"
        assert message.startswith("MCP server 'notes' did not start: ")
        assert "it exited with status 127" in message
        assert "command: python -m notes_server" in message
        assert "python: not found" in message  # bash's own words, from the sandbox
        assert (details["server"], details["exit_status"]) == ("notes", 127)
        assert details["retry_after"] > 0

    async def test_the_stderr_tail_is_redacted_and_one_line(self, tmp_path: Path) -> None:
        async with make_runtime(tmp_path, flaky(ready_directory())) as runtime:
            _, message, details = error_of(await runtime.execute("flaky__ping", {}))
        assert "its stderr ends: flaky: starting up | flaky: " in message
        assert "sk-live-0123456789abcdef" not in message
        assert "api_key=[REDACTED]" in message
        assert details["exit_status"] == 3
        assert "\n" not in message

    async def test_a_server_that_never_answers_is_named_with_its_timeout(
        self, tmp_path: Path
    ) -> None:
        silent = {"name": "silent", "command": ["/bin/sleep", "600"], "timeout": 1.0}
        async with make_runtime(tmp_path, silent) as runtime:
            _, message, details = error_of(await runtime.execute("silent__x", {}))
        assert "did not answer within 1 s (timeout)" in message
        assert "it was killed by SIGTERM" in message
        assert details["exit_status"] == -signal.SIGTERM


class TestContainment:
    async def test_other_servers_and_built_in_tools_work(self, tmp_path: Path) -> None:
        servers = (BARE_PYTHON, server_entry("basic", "basic.py"))
        async with make_runtime(tmp_path, *servers) as runtime:
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"
            assert not (await runtime.execute("get_current_time", {})).is_error
            assert [prefix for prefix, _ in runtime.registry.withheld()] == ["notes__"]
            # a name of no configured server is still not_found
            kind, _, _ = error_of(await runtime.execute("nobody__x", {}))
            assert kind == "not_found"

    async def test_the_config_may_name_the_tools_of_a_server_that_did_not_start(
        self, tmp_path: Path
    ) -> None:
        agents = {"helper": {"tools": ["notes__search", "get_current_time"]}}
        approval = {"auto_approve": ["notes__search"]}
        runtime = make_runtime(tmp_path, BARE_PYTHON, agents=agents, approval=approval)
        async with runtime:
            assert [d.name for d in runtime.registry.declarations("helper")] == ["get_current_time"]

    async def test_a_server_disabled_at_its_start_is_not_retried(self, tmp_path: Path) -> None:
        listing = Path(__file__).parents[3] / "adversarial" / "mcp_servers" / "listing.py"
        entry = server_entry("listing", listing, "endless", "start", list_pages=3)
        async with make_runtime(tmp_path, entry) as runtime:
            kind, message, details = error_of(await runtime.execute("listing__echo", {}))
        assert kind == "execution_error"
        assert "list_pages = 3" in message
        assert details["limit"] == "list_pages"
        assert "retry_after" not in details


class TestRetry:
    async def test_a_server_that_starts_later_brings_its_tools(self, tmp_path: Path) -> None:
        directory = ready_directory()
        async with make_runtime(tmp_path, flaky(directory)) as runtime:
            assert "flaky__ping" not in runtime.registry
            (directory / "ready").touch()
            while True:  # retried after 1 s, 2 s, ...: poll (the per-test timeout bounds it)
                result = await runtime.execute("flaky__ping", {})
                if not result.is_error:
                    break
                await anyio.sleep(0.05)
            assert text(result) == "pong"
            assert runtime.registry.withheld() == []
            assert [r.name for r in runtime.registry.listing() if r.name.startswith("flaky")] == [
                "flaky__ping"
            ]

    def test_the_backoff_doubles_from_one_second_to_five_minutes(self, tmp_path: Path) -> None:
        delays: list[float] = []
        attempted = threading.Event()

        async def sleep(seconds: float) -> None:  # the hub's sleep: records, never waits
            delays.append(seconds)
            if len(delays) == 12:
                attempted.set()
                await anyio.sleep_forever()

        server = McpServerConfig(name="broken", command=("/bin/false",), sandbox=False)
        hub = McpHub((server,), tmp_path, Redactor(), clock=lambda: 1000.0, sleep=sleep)
        try:
            hub.start_all()
            (connection,) = hub.connections
            assert connection.failure is not None
            hub.retry(lambda _: None)
            attempted.wait()
            assert delays == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]
            error = hub.unavailable(connection)
            assert error.details is not None
            assert error.details["retry_after"] == 300
            assert error.message.endswith("it is tried again in 300 s")
        finally:
            hub.close()


def kill_and_wait(pids: list[int]) -> None:
    """SIGKILL ``pids`` and wait until each has wholly exited: every thread, not only the
    leader (whose ``/proc`` state reads ``Z`` while the others are still being torn down)."""
    handles = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            handles.append(os.pidfd_open(pid))
    try:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for handle in handles:
            poller = select.poll()
            poller.register(handle, select.POLLIN)  # readable once the process has exited
            poller.poll()
    finally:
        for handle in handles:
            os.close(handle)


class TestSelfHealing:
    @pytest.mark.parametrize("sandbox", [True, False])
    async def test_a_server_killed_between_calls_is_restarted_for_the_next(
        self, tmp_path: Path, sandbox: bool
    ) -> None:
        marker = uuid.uuid4().hex
        entry = server_entry("faulty", "faulty.py", marker, sandbox=sandbox)
        async with make_runtime(tmp_path, entry) as runtime:
            first = text(await runtime.execute("faulty__instance", {}))
            pids = processes_running(marker.encode())
            assert pids
            await anyio.to_thread.run_sync(kill_and_wait, pids)
            second = await runtime.execute("faulty__instance", {})
            assert text(second) != first


def run_toolcage(*args: str, config: str, directory: Path) -> subprocess.CompletedProcess[str]:
    path = directory / "toolcage.toml"
    path.write_text(config)
    return subprocess.run(
        [sys.executable, "-m", "toolcage.runtime", *args, "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=directory,
    )


def toml(*servers: dict[str, Any]) -> str:
    lines = ['[shell]\nmode = "disabled"\n', "[state]\nenabled = false\n"]
    for server in servers:
        lines.append("[[mcp.servers]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in server.items()]
    return "\n".join(lines) + "\n"


class TestCommandLine:
    @pytest.fixture
    def config(self, tmp_path: Path) -> str:
        (tmp_path / "workspace").mkdir()
        return toml(BARE_PYTHON, server_entry("basic", "basic.py"))

    def test_tools_lists_the_server_with_its_reason(self, tmp_path: Path, config: str) -> None:
        done = run_toolcage("tools", config=config, directory=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        rows = {line.split()[0]: line for line in done.stdout.splitlines()}
        assert "basic__echo" in rows
        assert "get_current_time" in rows
        assert rows["notes__*"].split()[1] == "unavailable"
        assert "exited with status 127" in rows["notes__*"]
        as_json = run_toolcage("tools", "--json", config=config, directory=tmp_path)
        (entry,) = [row for row in json.loads(as_json.stdout) if "unavailable" in row]
        assert entry["name"] == "notes__*"
        assert "command: python -m notes_server" in entry["unavailable"]

    def test_call_runs_other_tools_and_refuses_its_tools_with_a_reason(
        self, tmp_path: Path, config: str
    ) -> None:
        done = run_toolcage(
            "call", "basic__echo", '{"text": "hi"}', config=config, directory=tmp_path
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["result"] == "echo: hi"
        refused = run_toolcage("call", "notes__search", "{}", config=config, directory=tmp_path)
        assert refused.returncode == 1, refused.stderr
        assert "Traceback" not in refused.stderr
        envelope = json.loads(refused.stdout)
        assert envelope["error_type"] == "execution_error"
        assert "did not start" in envelope["message"]

    def test_check_fails_on_the_server_only(self, tmp_path: Path, config: str) -> None:
        done = run_toolcage("check", config=config, directory=tmp_path)
        assert done.returncode == 1
        lines = {line.split()[1]: line for line in done.stdout.splitlines()}
        assert lines["config"].startswith("ok")
        assert lines["mcp"].startswith("FAIL")
        assert "1 of 2 servers not available: MCP server 'notes' did not start" in lines["mcp"]
        assert lines["guests"].startswith("ok")

    def test_check_counts_the_tools_of_servers_that_started(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        config = toml(server_entry("basic", "basic.py", hidden=["internal"]))
        done = run_toolcage("check", config=config, directory=tmp_path)
        lines = {line.split()[1]: line for line in done.stdout.splitlines()}
        assert (
            lines["mcp"]
            == "ok    mcp        every server started and listed its tools: basic (5 tools)"
        )

    def test_mcp_serves_the_other_tools(self, tmp_path: Path, config: str) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        path = tmp_path / "toolcage.toml"
        path.write_text(config)

        async def session() -> tuple[list[str], str]:
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "toolcage.runtime", "mcp", "--config", str(path)],
                cwd=str(tmp_path),
            )
            async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
                await mcp.initialize()
                names = [tool.name for tool in (await mcp.list_tools()).tools]
                result = await mcp.call_tool("basic__echo", {"text": "served"})
                block = result.content[0]
                return names, block.text if block.type == "text" else ""

        names, answer = anyio.run(session)
        assert "basic__echo" in names
        assert "get_current_time" in names
        assert answer == "echo: served"
