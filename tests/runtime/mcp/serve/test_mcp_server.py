"""``toolcage mcp``, driven by the official MCP SDK's client over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import stat
import subprocess
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import (
    AbstractAsyncContextManager,
    asynccontextmanager,
    contextmanager,
    nullcontext,
)
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from toolcage.runtime import ProgressUpdate, Runtime, SafetyTier, ToolResult
from toolcage.runtime._tool import FunctionDecl, ToolExecutionContext
from toolcage.runtime.mcp.serve._serve import serve_http

from ...cli.test_cli import COMMAND, config, sleeping

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def stdio_session(cwd: Path, *args: str, elicit: Any = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=COMMAND[0], args=[*COMMAND[1:], "mcp", *args], cwd=cwd, env=dict(os.environ)
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


class Reporter:
    """A host tool that reports progress twice, then answers."""

    timeout = 30.0
    safety_tier = SafetyTier.READ_ONLY

    def schema(self) -> FunctionDecl:
        return FunctionDecl("report_twice", "Report progress twice.", {"type": "object"})

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        ctx.progress(ProgressUpdate("half", 0.5))
        ctx.progress(ProgressUpdate("done", 1.0))
        return ToolResult.text("reported")


@asynccontextmanager
async def http_server(runtime: Runtime, token: str | None) -> AsyncIterator[str]:
    """``serve_http`` on 127.0.0.1 (a free port) in a task; yields its URL. Without a token
    the server is the operator's explicit ``--unsafe-no-token`` one."""
    log = io.StringIO()
    serve = partial(serve_http, unsafe_no_token=token is None, log=log)
    async with anyio.create_task_group() as group:
        group.start_soon(serve, runtime, "default", "127.0.0.1", 0, token)
        while "http://" not in log.getvalue():  # noqa: ASYNC110 - the server's own output
            await anyio.sleep(0.02)
        yield log.getvalue().split()[-1]
        group.cancel_scope.cancel()


@asynccontextmanager
async def http_session(
    url: str,
    headers: dict[str, str] | None = None,
    *,
    socket_path: Path | None = None,
    elicit: Any = None,
) -> AsyncIterator[ClientSession]:
    """The official client on ``url``; over the Unix socket ``socket_path`` if given."""
    transport = httpx2.AsyncHTTPTransport(uds=str(socket_path)) if socket_path else None
    async with (
        _unix_read_race_tolerated() if socket_path else nullcontext(),
        httpx2.AsyncClient(headers=headers, transport=transport) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, elicitation_callback=elicit) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def _unix_read_race_tolerated() -> AsyncIterator[None]:
    """Drop one report of the client library's, and only that one.

    anyio's Unix socket stream (under httpx2's ``uds`` transport) waits for a read with a
    loop reader that sets a future; when the peer's bytes and the cancellation of that
    read land in one loop iteration -- as they do when a closing client cancels its SSE
    stream while the server ends it -- the reader sets the cancelled future, and asyncio
    reports ``InvalidStateError`` from ``Future.set_result`` to the loop's exception
    handler (which anyio's test runner turns into a failure). The read was abandoned; nothing
    is lost. Every other report goes on to the handler that was there.
    """
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        race = isinstance(context.get("exception"), asyncio.InvalidStateError) and context.get(
            "message", ""
        ).startswith("Exception in callback Future.set_result(")
        if race:
            return
        if previous is None:
            loop.default_exception_handler(context)
        else:
            previous(loop, context)

    loop.set_exception_handler(handler)
    try:
        yield
    finally:
        loop.set_exception_handler(previous)


SOCKET_URL = "http://localhost/mcp"
"""What a client asks for on the Unix socket (the host names nothing there)."""


def socket_session(path: Path, elicit: Any = None) -> AbstractAsyncContextManager[ClientSession]:
    return http_session(SOCKET_URL, socket_path=path, elicit=elicit)


def env_without_token() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "TOOLCAGE_MCP_TOKEN"}


class Served:
    """``toolcage mcp ...`` running as a process."""

    def __init__(self, process: subprocess.Popen[str], before: list[str], banner: str) -> None:
        self.process = process
        self.before = before
        """What it wrote to stderr before its banner."""
        self.banner = banner
        """The line naming where it serves."""
        self.stderr = ""
        """What it wrote after the banner, once it has stopped."""

    @property
    def url(self) -> str:
        return self.banner.split()[2]

    def stop(self) -> int:
        """SIGTERM (once); its exit status."""
        if self.process.returncode is None:
            self.process.terminate()
            self.stderr = self.process.communicate()[1]
        return self.process.returncode


@contextmanager
def served(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """``toolcage mcp ARGS`` started in ``cwd``, once it has printed where it serves."""
    process = subprocess.Popen(
        [*COMMAND, "mcp", *args],
        cwd=cwd,
        env=env_without_token() if env is None else env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    running = None
    try:
        assert process.stderr is not None
        before: list[str] = []
        while not (line := process.stderr.readline()).startswith("toolcage mcp: "):
            assert line, f"it stopped: {''.join(before)}"
            before.append(line)
        running = Served(process, before, line.strip())
        yield running
    finally:
        if running is not None:
            running.stop()
        else:
            process.kill()
            process.communicate()


class TestStdio:
    async def test_lists_tools_with_annotations(self, tmp_path: Path) -> None:
        async with stdio_session(tmp_path) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
        read = tools["file_read"].annotations
        assert read is not None
        assert (read.read_only_hint, read.destructive_hint, read.open_world_hint) == (
            True,
            False,
            False,
        )
        assert read.title == "File read"
        delete = tools["file_delete"].annotations
        assert delete is not None
        assert (delete.read_only_hint, delete.destructive_hint) == (False, True)
        fetch = tools["web_fetch"].annotations
        assert fetch is not None
        assert fetch.open_world_hint is True
        assert tools["file_read"].input_schema["properties"]["path"]["type"] == "string"

    async def test_calls_a_read_only_and_a_side_effecting_tool(self, tmp_path: Path) -> None:
        async with stdio_session(tmp_path) as session:
            wrote = await session.call_tool(
                "file_write", {"path": "/workspace/a.txt", "content": "hello"}
            )
            read = await session.call_tool("file_read", {"path": "/workspace/a.txt"})
        assert isinstance(wrote, types.CallToolResult)
        assert not wrote.is_error
        assert isinstance(read, types.CallToolResult)
        assert not read.is_error
        assert "hello" in text_of(read)
        assert read.structured_content["status"] == "success"

    async def test_a_typed_error_is_an_error_result_with_the_in_process_message(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        async with stdio_session(tmp_path) as session:
            result = await session.call_tool("file_read", {"path": "/etc/passwd"})
        monkeypatch.chdir(tmp_path)
        async with Runtime.from_config(None) as runtime:
            expected = await runtime.execute("file_read", {"path": "/etc/passwd"})
        assert isinstance(result, types.CallToolResult)
        assert result.is_error
        assert text_of(result) == expected.output_text
        assert result.structured_content["error_type"] == expected.envelope()["error_type"]

    async def test_an_unknown_tool_is_an_error_result(self, tmp_path: Path) -> None:
        async with stdio_session(tmp_path) as session:
            result = await session.call_tool("no_such_tool", {})
        assert isinstance(result, types.CallToolResult)
        assert result.is_error
        assert result.structured_content["error_type"] == "not_found"

    async def test_a_privileged_call_without_elicitation_is_refused(self, tmp_path: Path) -> None:
        path = config(tmp_path, '[shell]\nmode = "host"\n')
        async with stdio_session(tmp_path, "--config", str(path)) as session:
            result = await session.call_tool("shell_exec", {"command": "touch ran"})
        assert isinstance(result, types.CallToolResult)
        assert result.is_error
        assert result.structured_content["error_type"] == "permission_denied"
        assert "does not support elicitation" in text_of(result)
        assert not (tmp_path / "workspace" / "ran").exists()

    @pytest.mark.parametrize("approve", [True, False])
    async def test_a_privileged_call_asks_the_client(self, tmp_path: Path, approve: bool) -> None:
        path = config(tmp_path, '[shell]\nmode = "host"\n')
        asked: list[str] = []

        async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"approve": approve})

        async with stdio_session(tmp_path, "--config", str(path), elicit=elicit) as session:
            result = await session.call_tool("shell_exec", {"command": "touch ran"})
        assert len(asked) == 1
        assert "shell_exec" in asked[0]
        assert isinstance(result, types.CallToolResult)
        assert result.is_error is not approve
        assert (tmp_path / "workspace" / "ran").exists() is approve

    async def test_cancelling_a_call_stops_the_command(self, tmp_path: Path) -> None:
        path = config(
            tmp_path, '[shell]\nmode = "host"\n[approval]\nauto_approve = ["shell_exec"]\n'
        )
        seconds = 4000 + os.getpid() % 1000
        started = tmp_path / "workspace" / "started"
        async with stdio_session(tmp_path, "--config", str(path)) as session:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    session.call_tool,
                    "shell_exec",
                    {"command": f"touch started && sleep {seconds}"},
                )
                while not started.exists():  # noqa: ASYNC110 - another process's file
                    await anyio.sleep(0.02)
                group.cancel_scope.cancel()
            # the server is still up, and the command is gone while it is
            while sleeping(f"sleep\0{seconds}"):  # noqa: ASYNC110 - another process
                await anyio.sleep(0.05)
            listed = await session.list_tools()
        assert listed.tools

    async def test_an_agent_gets_only_its_tools(self, tmp_path: Path) -> None:
        path = config(tmp_path, '[agents.reader]\ntools = ["file_read", "file_list"]\n')
        async with stdio_session(tmp_path, "--config", str(path), "--agent", "reader") as session:
            names = sorted(t.name for t in (await session.list_tools()).tools)
            refused = await session.call_tool("file_write", {"path": "/workspace/x", "content": ""})
        assert names == ["file_list", "file_read"]
        assert isinstance(refused, types.CallToolResult)
        assert refused.is_error
        assert not (tmp_path / "workspace" / "x").exists()

    def test_an_unknown_agent_is_a_usage_error(self, tmp_path: Path) -> None:
        done = subprocess.run(
            [*COMMAND, "mcp", "--agent", "nobody"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        assert "no agent 'nobody'" in done.stderr
        assert "Traceback" not in done.stderr


class TestHttp:
    async def test_calls_and_progress_over_http(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "workspace").mkdir()
        updates: list[tuple[float, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            updates.append((progress, message))

        async with (
            Runtime.from_config(None, tools=[Reporter()]) as runtime,
            http_server(runtime, None) as url,
            http_session(url) as session,
        ):
            names = {t.name for t in (await session.list_tools()).tools}
            result = await session.call_tool("report_twice", {}, progress_callback=on_progress)
        assert "report_twice" in names
        assert "file_read" in names
        assert isinstance(result, types.CallToolResult)
        assert text_of(result) == "reported"
        assert updates == [(0.5, "half"), (1.0, "done")]

    async def test_a_token_is_required_when_one_is_set(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "workspace").mkdir()
        async with Runtime.from_config(None) as runtime, http_server(runtime, "s3cret") as url:
            async with httpx2.AsyncClient() as client:
                refused = await client.post(url, json={})
            async with http_session(url, {"Authorization": "Bearer s3cret"}) as session:
                tools = (await session.list_tools()).tools
        assert refused.status_code == 401
        assert tools

    async def test_a_foreign_origin_is_refused(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        (tmp_path / "workspace").mkdir()
        async with (
            Runtime.from_config(None) as runtime,
            http_server(runtime, None) as url,
            httpx2.AsyncClient() as client,
        ):
            refused = await client.post(
                url,
                json={},
                headers={"Origin": "http://evil.example", "Accept": "application/json"},
            )
        assert refused.status_code == 403

    def test_binding_beyond_loopback_needs_a_token(self, tmp_path: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k != "TOOLCAGE_MCP_TOKEN"}
        done = subprocess.run(
            [*COMMAND, "mcp", "--http", "0.0.0.0:0"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        assert "needs a bearer token" in done.stderr
        assert "Traceback" not in done.stderr

    async def test_the_command_reads_the_token_the_config_names(self, tmp_path: Path) -> None:
        path = config(tmp_path, '[mcp.serve]\ntoken_env = "SERVE_TOKEN"\n')
        env = {**os.environ, "SERVE_TOKEN": "from-the-config"}
        process = await anyio.open_process(
            [*COMMAND, "mcp", "--http", "127.0.0.1:0", "--config", str(path)],
            cwd=tmp_path,
            env=env,
        )
        try:
            assert process.stderr is not None
            seen = b""
            while b"/mcp\n" not in seen:
                seen += await process.stderr.receive()
            url = seen.decode().split()[-1]
            async with httpx2.AsyncClient() as client:
                refused = await client.post(url, json={})
            async with http_session(url, {"Authorization": "Bearer from-the-config"}) as session:
                tools = (await session.list_tools()).tools
        finally:
            process.terminate()
            await process.wait()
        assert refused.status_code == 401
        assert tools

    def test_a_token_variable_that_is_not_set_is_a_usage_error(self, tmp_path: Path) -> None:
        path = config(tmp_path, '[mcp.serve]\ntoken_env = "UNSET_SERVE_TOKEN"\n')
        done = subprocess.run(
            [*COMMAND, "mcp", "--http", "127.0.0.1:0", "--config", str(path)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "UNSET_SERVE_TOKEN"},
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        assert "$UNSET_SERVE_TOKEN is not set" in done.stderr


class TestSocket:
    async def test_serves_its_own_user_and_removes_the_socket_when_stopped(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "mcp.sock"
        with served(tmp_path, "--socket", str(path)) as server:
            mode = stat.S_IMODE(path.stat().st_mode)
            async with socket_session(path) as session:
                names = {t.name for t in (await session.list_tools()).tools}
                wrote = await session.call_tool(
                    "file_write", {"path": "/workspace/a.txt", "content": "hello"}
                )
            status = server.stop()
        assert server.banner == f"toolcage mcp: {SOCKET_URL} on the Unix socket {path}"
        assert mode == 0o600
        assert "file_read" in names
        assert not wrote.is_error
        assert (tmp_path / "workspace" / "a.txt").read_text() == "hello"
        assert status == 0
        assert not path.exists()
        assert "Traceback" not in server.stderr

    async def test_a_token_once_set_is_required_on_the_socket_too(self, tmp_path: Path) -> None:
        path = tmp_path / "mcp.sock"
        env = {**env_without_token(), "TOOLCAGE_MCP_TOKEN": "s3cret"}
        with served(tmp_path, "--socket", str(path), env=env):
            transport = httpx2.AsyncHTTPTransport(uds=str(path))
            async with httpx2.AsyncClient(transport=transport) as client:
                refused = await client.post(SOCKET_URL, json={})
            async with http_session(
                SOCKET_URL, {"Authorization": "Bearer s3cret"}, socket_path=path
            ) as session:
                tools = (await session.list_tools()).tools
        assert refused.status_code == 401
        assert tools

    def test_a_stale_socket_is_replaced_and_a_live_one_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "mcp.sock"
        with socket.socket(socket.AF_UNIX) as stale:
            stale.bind(str(path))  # closed without removing: what a killed server leaves
        with served(tmp_path, "--socket", str(path)):
            second = subprocess.run(
                [*COMMAND, "mcp", "--socket", str(path)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert path.exists()
        assert second.returncode == 2
        assert f"another server is listening on {path}" in second.stderr
        assert "Traceback" not in second.stderr

    @pytest.mark.parametrize(
        ("args", "expected"),
        [
            (["--socket", "{tmp}/file"], "exists and is not a socket"),
            (["--socket", "{tmp}/no/such/dir/mcp.sock"], "cannot bind"),
            (["--unsafe-no-token"], "--unsafe-no-token goes with --http"),
            (["--unsafe-no-token", "--socket", "{tmp}/mcp.sock"], "goes with --http"),
        ],
    )
    def test_a_bad_choice_is_a_usage_error(
        self, tmp_path: Path, args: list[str], expected: str
    ) -> None:
        (tmp_path / "file").write_text("not a socket")
        done = subprocess.run(
            [*COMMAND, "mcp", *(arg.format(tmp=tmp_path) for arg in args)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env_without_token(),
            timeout=120,
            check=False,
        )
        assert done.returncode == 2
        assert expected in done.stderr
        assert "Traceback" not in done.stderr
        assert (tmp_path / "file").read_text() == "not a socket"
