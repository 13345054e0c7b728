"""Hostile MCP servers from ``[[mcp.servers]]``, under the real sandbox, through the doors
users use: ``Runtime.from_config`` + ``execute`` and the ``toolcage`` command.

The servers (``mcp_servers/``) are written with the official SDK. Each attack stops by
itself after a while, so that a host without the limits is harmed no more than a test run
can bear; the limits must end it long before. Nothing here bounds wall-clock time: calls
get generous deadlines, and what happens later is polled for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, ToolResult

from ..runtime.mcp_servers import PYTHON, SANDBOX_UID, reachable, server_entry
from ..sidecar.conftest import give_to_sandbox, processes_running, scratch

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

SERVERS = Path(__file__).parent / "mcp_servers"
HOSTILE = SERVERS / "hostile.py"
LISTING = SERVERS / "listing.py"
LIMITS: dict[str, Any] = {
    "processes": 32,
    "cpu_seconds": 5,  # a Python server takes about one to start
    "message_bytes": 1024 * 1024,
    "list_pages": 10,
    "timeout": 120.0,
}
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the uid changes only under root")


def hostile(marker: str, **extra: Any) -> dict[str, Any]:
    """The hostile server, its processes named by ``marker`` on the host."""
    return server_entry("hostile", HOSTILE, "--marker", marker, **(LIMITS | extra))


def basic() -> dict[str, Any]:
    return server_entry("basic", "basic.py")


def make_runtime(tmp_path: Path, *servers: dict[str, Any], **raw: Any) -> Runtime:
    (tmp_path / "workspace").mkdir(exist_ok=True)
    config = parse_config({"mcp": {"servers": list(servers)}, **raw}, base_dir=tmp_path)
    return Runtime.from_config(config)


def text(result: ToolResult) -> str:
    assert not result.is_error, result.envelope()
    return result.output_text


def error_of(result: ToolResult) -> tuple[str, dict[str, Any]]:
    assert result.error is not None, result.envelope()
    return result.error.kind.value, result.error.details or {}


async def gone(marker: str) -> None:
    """Wait until no process of the server named by ``marker`` is left."""
    while processes_running(marker.encode()):  # noqa: ASYNC110 (processes, not events)
        await anyio.sleep(0.05)


def peak_memory() -> int:
    """Bytes of this process's peak resident memory since :func:`reset_peak_memory`."""
    status = Path("/proc/self/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found is not None
    return int(found.group(1)) * 1024


def reset_peak_memory() -> None:
    Path("/proc/self/clear_refs").write_text("5")


class TestForkBomb:
    async def test_the_process_limit_holds_and_the_host_can_still_fork(
        self, tmp_path: Path
    ) -> None:
        marker = uuid.uuid4().hex
        async with make_runtime(tmp_path, hostile(marker), basic()) as runtime:
            report = json.loads(text(await runtime.execute("hostile__fork", {"most": 200})))
            assert report["error"] == "EAGAIN"
            assert report["started"] < LIMITS["processes"]
            # the children still wait; bubblewrap's two processes carry the marker too
            assert len(processes_running(marker.encode())) <= LIMITS["processes"] + 2
            # the sandbox is full, the host is not: even its uid starts processes there
            host = await anyio.run_process(
                ["/bin/true"], user=SANDBOX_UID, group=SANDBOX_UID, extra_groups=[], check=False
            )
            assert host.returncode == 0
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"
        await gone(marker)

    async def test_a_bomb_that_keeps_forking_ends_at_its_deadline(self, tmp_path: Path) -> None:
        marker = uuid.uuid4().hex
        servers = (hostile(marker), basic())
        deadline = {"hostile__bomb": {"timeout": 10.0}}  # the bomb never ends under the limit
        async with make_runtime(tmp_path, *servers, tools=deadline) as runtime:
            kind, _ = error_of(await runtime.execute("hostile__bomb", {"most": 200}))
            assert kind == "timeout"
            await gone(marker)  # the whole sandbox stopped with the call
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"
            assert text(await runtime.execute("hostile__echo", {"text": "back"})) == "back"


class TestCpu:
    @pytest.mark.timeout(900)
    async def test_a_spinning_child_is_killed_by_the_cpu_limit(self, tmp_path: Path) -> None:
        async with make_runtime(tmp_path, hostile(uuid.uuid4().hex)) as runtime:
            ended = text(await runtime.execute("hostile__spin_child", {"cpu": 30}))
            assert ended in ("killed by SIGKILL", "killed by SIGXCPU")

    @pytest.mark.timeout(900)
    async def test_a_server_spinning_in_a_call_is_killed_and_restarts(self, tmp_path: Path) -> None:
        marker = uuid.uuid4().hex
        async with make_runtime(tmp_path, hostile(marker, timeout=600.0), basic()) as runtime:
            kind, _ = error_of(await runtime.execute("hostile__spin", {"cpu": 60}))
            assert kind == "execution_error"
            await gone(marker)
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"
            assert text(await runtime.execute("hostile__echo", {"text": "back"})) == "back"


class TestMemory:
    async def test_memory_past_memory_bytes_is_refused_as_a_data_limit(
        self, tmp_path: Path
    ) -> None:
        limit = 256 * 1024 * 1024
        async with make_runtime(tmp_path, hostile(uuid.uuid4().hex, memory_bytes=limit)) as rt:
            report = json.loads(text(await rt.execute("hostile__hoard", {"megabytes": 1024})))
        assert report["megabytes"] < limit // (1024 * 1024)
        # the data segment is bounded; address space is not (Node and the JVM reserve much)
        assert report["limits"] == {"data": limit, "address_space": -1}


class TestHugeMessage:
    async def test_a_message_past_message_bytes_is_cut_and_the_server_disabled(
        self, tmp_path: Path
    ) -> None:
        marker = uuid.uuid4().hex
        async with make_runtime(tmp_path, hostile(marker), basic()) as runtime:
            reset_peak_memory()
            before = peak_memory()
            flooded = await runtime.execute("hostile__flood", {"megabytes": 200})
            grown = peak_memory() - before
            kind, details = error_of(flooded)
            assert kind == "execution_error"
            assert details["limit"] == "message_bytes"
            assert details["allowed"] == LIMITS["message_bytes"]
            assert details["actual"] > LIMITS["message_bytes"]
            assert "(message_bytes = 1048576)" in str(flooded.envelope()["message"])
            assert grown < 64 * 1024 * 1024, grown  # a 200 MiB line was never held
            await gone(marker)
            kind, details = error_of(await runtime.execute("hostile__echo", {"text": "x"}))
            assert (kind, details["limit"]) == ("execution_error", "message_bytes")
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"


def listing(mode: str, when: str, *args: str, **extra: Any) -> dict[str, Any]:
    return server_entry("listing", LISTING, mode, when, *args, **extra)


def shared_directory() -> Path:
    """A directory the listing server writes its count of requests in, as whatever uid."""
    shared = scratch("listing-")
    shared.chmod(0o777)
    return shared


class TestToolLists:
    @pytest.mark.parametrize(
        ("mode", "key"),
        [("endless", "list_pages"), ("many", "listed_tools"), ("wide", "schema_bytes")],
    )
    async def test_a_list_past_its_default_bound_at_the_start_disables_the_server(
        self, tmp_path: Path, mode: str, key: str
    ) -> None:
        async with make_runtime(tmp_path, listing(mode, "start"), basic()) as runtime:
            result = await runtime.execute("listing__echo", {"text": "x"})
            kind, details = error_of(result)
            assert (kind, details["limit"]) == ("execution_error", key)
            assert f"{key} = " in str(result.envelope()["message"])
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"

    async def test_an_endless_list_after_a_change_disables_the_server(self, tmp_path: Path) -> None:
        shared = shared_directory()
        counter = shared / "requests"
        entry = listing("endless", "later", str(counter), read_write=[str(shared)], **LIMITS)
        async with make_runtime(tmp_path, entry, basic()) as runtime:
            asked_at_start = counter.stat().st_size
            assert text(await runtime.execute("listing__go", {})) == "gone wrong"
            while True:  # the new list is read after the announcement; poll until it ends
                result = await runtime.execute("listing__echo", {"text": "x"})
                if result.is_error:
                    break
                await anyio.sleep(0.05)
            kind, details = error_of(result)
            assert (kind, details["limit"]) == ("execution_error", "list_pages")
            # the client stopped asking at the bound: the list was not read on and on
            assert counter.stat().st_size - asked_at_start <= LIMITS["list_pages"]
            assert text(await runtime.execute("basic__echo", {"text": "hi"})) == "echo: hi"

    async def test_new_names_at_every_change_end_at_listed_tools(self, tmp_path: Path) -> None:
        shared = shared_directory()
        counter = shared / "requests"
        entry = listing("growing", "later", str(counter), read_write=[str(shared)], **LIMITS)
        async with make_runtime(tmp_path, entry | {"listed_tools": 250}) as runtime:
            # 3 names at the start, then 100 more at each listing: the third passes 250
            for _ in range(3):
                asked = counter.stat().st_size
                assert text(await runtime.execute("listing__go", {})) == "gone wrong"
                while counter.stat().st_size == asked:  # noqa: ASYNC110 (another process)
                    await anyio.sleep(0.05)
            while True:  # the last listing ends after its announcement; poll until it has
                result = await runtime.execute("listing__echo", {"text": "x"})
                if result.is_error:
                    break
                await anyio.sleep(0.05)
            kind, details = error_of(result)
            assert (kind, details["limit"], details["actual"]) == (
                "execution_error",
                "listed_tools",
                303,
            )

    async def test_a_storm_of_announcements_is_listed_one_at_a_time(self, tmp_path: Path) -> None:
        shared = shared_directory()
        counter = shared / "requests"
        entry = listing("storm", "later", str(counter), read_write=[str(shared)], **LIMITS)
        async with make_runtime(tmp_path, entry) as runtime:
            asked = counter.stat().st_size
            assert text(await runtime.execute("listing__go", {})) == "gone wrong"
            # the first announcement starts a listing, the rest ask for one more after it
            while counter.stat().st_size < asked + 2:  # noqa: ASYNC110 (another process)
                await anyio.sleep(0.05)
            assert text(await runtime.execute("listing__most_at_once", {})) == "1"


class TestPrivileges:
    async def test_the_server_holds_no_capability_and_privileged_calls_fail(
        self, tmp_path: Path
    ) -> None:
        async with make_runtime(tmp_path, hostile(uuid.uuid4().hex)) as runtime:
            report = json.loads(text(await runtime.execute("hostile__privileges", {})))
        assert [name for name, got in report["outcomes"].items() if got == "done"] == []
        credentials = report["credentials"]
        for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(credentials[key], 16) == 0, (key, credentials)
        assert credentials["NoNewPrivs"] == "1"

    @root_only
    async def test_a_root_runtime_runs_the_server_as_the_sandbox_uid(self, tmp_path: Path) -> None:
        marker = uuid.uuid4().hex
        async with make_runtime(tmp_path, hostile(marker)) as runtime:
            assert text(await runtime.execute("hostile__echo", {"text": "up"})) == "up"
            pids = processes_running(marker.encode())
            assert pids
            for pid in pids:
                status = (await anyio.Path(f"/proc/{pid}/status").read_text()).splitlines()
                ids = {line.split(":")[0]: line.split()[1:] for line in status}
                assert ids["Uid"] == [str(SANDBOX_UID)] * 4, pid
                assert ids["Gid"] == [str(SANDBOX_UID)] * 4, pid
                assert ids["Groups"] == [], pid
            assert os.geteuid() == 0  # the runtime itself stays root


def toml(servers: list[dict[str, Any]]) -> str:
    """A config with ``servers`` (JSON's strings, numbers and arrays are TOML's too)."""
    lines = ['[shell]\nmode = "disabled"\n', "[state]\nenabled = false\n"]
    for server in servers:
        lines.append("[[mcp.servers]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in server.items()]
    return "\n".join(lines) + "\n"


def run_toolcage(
    *args: str, config: str, directory: Path, unprivileged: bool = False, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """The ``toolcage`` command with ``config``, as a real process; ``unprivileged`` runs
    it as nobody when the tests run as root."""
    path = directory / "toolcage.toml"
    path.write_text(config)
    if not unprivileged or os.geteuid() != 0:
        command = [sys.executable, "-m", "toolcage.runtime"]
        return subprocess.run(
            [*command, *args, "--config", str(path)],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
    # nobody's Python: the servers' own, with this environment's packages (toolcage too)
    packages = sysconfig.get_paths()["purelib"]
    program = (
        "import site, sys; site.addsitedir(sys.argv.pop(1)); "
        "from toolcage.runtime.cli import main; sys.exit(main())"
    )
    return subprocess.run(
        [*PYTHON, "-c", program, packages, *args, "--config", str(path)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        user=SANDBOX_UID,
        group=SANDBOX_UID,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": str(directory), "XDG_CACHE_HOME": str(directory)},
        cwd=directory,
    )


@pytest.fixture
def open_directory() -> Path:
    """A directory nobody may use: configs and caches of a command run as nobody."""
    directory = scratch("cli-")
    directory.chmod(0o755)
    give_to_sandbox(directory)
    return directory


class TestCommandLine:
    def test_tools_lists_a_server_whose_list_never_ends_as_unavailable(
        self, open_directory: Path
    ) -> None:
        config = toml([listing("endless", "start")])
        done = run_toolcage("tools", config=config, directory=open_directory)
        assert "Traceback" not in done.stderr
        assert done.returncode == 0, done.stderr
        (row,) = [line for line in done.stdout.splitlines() if line.startswith("listing__")]
        assert row.split()[:2] == ["listing__*", "unavailable"]
        assert "MCP server 'listing' is disabled" in row
        assert "list_pages = 64" in row

    @pytest.mark.parametrize("unprivileged", [False, True])
    def test_a_server_that_does_not_start_is_listed_with_why_as_either_uid(
        self, open_directory: Path, unprivileged: bool
    ) -> None:
        nobody_has_no_python = PYTHON[0] == sys.executable and not reachable(sys.executable)
        if unprivileged and os.geteuid() == 0 and nobody_has_no_python:
            pytest.skip("no Python that nobody can run")
        broken = {"name": "broken", "command": ["python", "-m", "notes_server"]}
        config = toml([broken, basic()])
        done = run_toolcage(
            "tools", config=config, directory=open_directory, unprivileged=unprivileged
        )
        assert done.returncode == 0, done.stderr
        rows = {line.split()[0]: line for line in done.stdout.splitlines()}
        assert "basic__echo" in rows
        assert "it exited with status 127" in rows["broken__*"]
        assert "python: not found" in rows["broken__*"]

    def test_call_reports_a_flood_as_an_envelope(self, open_directory: Path) -> None:
        config = toml([hostile(uuid.uuid4().hex)])
        arguments = json.dumps({"megabytes": 200})
        done = run_toolcage(
            "call", "hostile__flood", arguments, config=config, directory=open_directory
        )
        assert "Traceback" not in done.stderr
        assert done.returncode == 1, done.stderr
        envelope = json.loads(done.stdout)
        assert envelope["error_type"] == "execution_error"
        assert envelope["details"]["limit"] == "message_bytes"

    @pytest.mark.skipif(
        os.geteuid() == 0 and not reachable(sys.executable) and PYTHON[0] == sys.executable,
        reason="no Python that nobody can run",
    )
    def test_an_unprivileged_runtime_holds_its_servers_to_the_same_limits(
        self, open_directory: Path
    ) -> None:
        config = toml([hostile(uuid.uuid4().hex)])
        calls = [
            {"tool": "hostile__fork", "arguments": {"most": 200}, "id": "fork"},
            {"tool": "hostile__privileges", "arguments": {}, "id": "privileges"},
        ]
        stdin = "".join(json.dumps(call) + "\n" for call in calls)
        done = run_toolcage(
            "call",
            "--jsonl",
            config=config,
            directory=open_directory,
            stdin=stdin,
            unprivileged=True,
        )
        assert "Traceback" not in done.stderr
        answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
        assert done.returncode == 0, done.stderr
        fork = json.loads(answers["fork"]["result"])
        assert fork["error"] == "EAGAIN"
        assert fork["started"] < LIMITS["processes"]
        report = json.loads(answers["privileges"]["result"])
        assert [name for name, got in report["outcomes"].items() if got == "done"] == []
        assert int(report["credentials"]["CapEff"], 16) == 0
