"""Rate limits and byte quotas, through ``Runtime.from_config`` and ``execute``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ConfigError
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, ToolResult, tool

from ..host_bindings.servers import Server, serving
from ..host_bindings.store.libsql_server import LibsqlServer

pytestmark = pytest.mark.anyio


@tool(safety_tier=SafetyTier.READ_ONLY)
def lookup(word: str) -> str:
    """Look a word up."""
    return word.upper()


@tool(safety_tier=SafetyTier.SIDE_EFFECTING)
def note(text: str) -> str:
    """Write a note."""
    return f"noted {text}"


class Clock:
    """Wall-clock seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolcage.toml"
    path.write_text(textwrap.dedent(text))
    (tmp_path / "workspace").mkdir(exist_ok=True)
    return path


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def limited(tmp_path: Path, clock: Clock) -> AsyncIterator[Runtime]:
    """``lookup`` limited to 2 calls at once, 1 more every 10 s, per user."""
    path = write_config(
        tmp_path,
        """
        [rate_limits.lookups]
        tools = ["lookup"]
        per = ["user"]
        calls = 6
        window = 60
        burst = 2
        """,
    )
    async with Runtime.from_config(path, tools=[lookup, note]) as runtime:
        assert runtime.rate_limits is not None
        runtime.rate_limits.clock = clock
        yield runtime


def as_user(user: str, agent: str = "default") -> ToolExecutionContext:
    return ToolExecutionContext(user_id=user, agent_id=agent)


async def call(
    runtime: Runtime, name: str, ctx: ToolExecutionContext | None = None, **args: Any
) -> ToolResult:
    return await runtime.execute(name, args or {"word": "x"}, ctx)


def refused(result: ToolResult) -> dict[str, Any]:
    envelope = result.envelope()
    assert envelope["error_type"] == "permission_denied", envelope
    details: dict[str, Any] = envelope["details"]
    return details


class TestCallBucket:
    async def test_refuses_after_the_burst_and_says_when_to_retry(self, limited: Runtime) -> None:
        for _ in range(2):
            assert not (await call(limited, "lookup")).is_error
        result = await call(limited, "lookup")
        details = refused(result)
        assert details["retry_after"] == 10.0
        assert details["limit"] == "lookups"
        assert (details["calls"], details["burst"], details["window"]) == (6, 2, 60.0)
        message = result.envelope()["message"]
        assert message == (
            "rate limit 'lookups' exceeded for user 'local' (6 calls per 60 s, at most 2 at"
            " once); retry after 10 s"
        )

    async def test_admits_again_once_the_bucket_refilled(
        self, limited: Runtime, clock: Clock
    ) -> None:
        for _ in range(2):
            await call(limited, "lookup")
        clock.now += 5.8
        assert refused(await call(limited, "lookup"))["retry_after"] == 4.2
        clock.now += 4.2
        assert not (await call(limited, "lookup")).is_error
        assert (await call(limited, "lookup")).is_error
        clock.now += 3600  # a long pause refills the bucket to its size, no more
        for _ in range(2):
            assert not (await call(limited, "lookup")).is_error
        assert (await call(limited, "lookup")).is_error

    async def test_other_tools_are_not_counted(self, limited: Runtime) -> None:
        for _ in range(5):
            assert not (await limited.execute("note", {"text": "a"})).is_error

    async def test_a_limit_per_user_keeps_one_budget_per_user(self, limited: Runtime) -> None:
        for _ in range(2):
            await call(limited, "lookup", as_user("ada"))
        assert (await call(limited, "lookup", as_user("ada", "other"))).is_error
        assert not (await call(limited, "lookup", as_user("bob"))).is_error


class TestAuditRecord:
    async def test_a_refusal_is_the_rate_limit_policys_decision(
        self, tmp_path: Path, clock: Clock
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.lookups]
            tools = ["lookup"]
            calls = 1
            window = 60

            [audit]
            path = "audit.jsonl"
            """,
        )
        async with Runtime.from_config(path, tools=[lookup]) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert not (await call(runtime, "lookup")).is_error
            refusal = await call(runtime, "lookup")
            refused(refusal)
        admitted, denied = audited_calls(tmp_path)
        assert admitted["decisions"] == []
        assert denied["error_type"] == "permission_denied"
        assert denied["decisions"] == [
            {"policy": "rate_limit", "allowed": False, "reason": refusal.envelope()["message"]}
        ]


def audited_calls(root: Path) -> list[dict[str, Any]]:
    lines = (root / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    return [record for record in map(json.loads, lines) if record["type"] == "call"]


class TestKeys:
    async def test_a_limit_per_agent_is_shared_by_the_agents_users(
        self, tmp_path: Path, clock: Clock
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.per_agent]
            tools = ["lookup"]
            per = ["agent"]
            calls = 2
            window = 3600
            """,
        )
        async with Runtime.from_config(path, tools=[lookup]) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert not (await call(runtime, "lookup", as_user("ada", "a1"))).is_error
            assert not (await call(runtime, "lookup", as_user("bob", "a1"))).is_error
            result = await call(runtime, "lookup", as_user("cy", "a1"))
            assert "for agent 'a1'" in result.envelope()["message"]
            assert refused(result)["per"] == ["agent"]
            assert not (await call(runtime, "lookup", as_user("ada", "a2"))).is_error

    async def test_a_limit_per_user_and_agent(self, tmp_path: Path, clock: Clock) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.pairs]
            tools = ["*"]
            per = ["user", "agent"]
            calls = 1
            window = 3600
            """,
        )
        async with Runtime.from_config(path, tools=[lookup]) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert not (await call(runtime, "lookup", as_user("ada", "a1"))).is_error
            assert (await call(runtime, "lookup", as_user("ada", "a1"))).is_error
            assert not (await call(runtime, "lookup", as_user("ada", "a2"))).is_error
            assert not (await call(runtime, "lookup", as_user("bob", "a1"))).is_error

    async def test_every_matching_limit_applies_and_a_refusal_spends_none(
        self, tmp_path: Path, clock: Clock
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.wide]
            tools = ["*"]
            calls = 3
            window = 3600

            [rate_limits.narrow]
            tools = ["lookup"]
            calls = 1
            window = 3600
            """,
        )
        async with Runtime.from_config(path, tools=[lookup, note]) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert not (await call(runtime, "lookup")).is_error
            for _ in range(3):  # refused by 'narrow': nothing of 'wide' is spent
                assert refused(await call(runtime, "lookup"))["limit"] == "narrow"
            assert not (await runtime.execute("note", {"text": "a"})).is_error
            assert not (await runtime.execute("note", {"text": "b"})).is_error
            assert refused(await runtime.execute("note", {"text": "c"}))["limit"] == "wide"


class TestClasses:
    async def test_a_tier_limits_the_tools_of_that_tier_only(
        self, tmp_path: Path, clock: Clock
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.writes]
            tools = ["side_effecting"]
            calls = 1
            window = 3600
            """,
        )
        async with Runtime.from_config(path, tools=[lookup, note]) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert not (await runtime.execute("note", {"text": "a"})).is_error
            assert refused(await runtime.execute("note", {"text": "b"}))["limit"] == "writes"
            for _ in range(3):
                assert not (await call(runtime, "lookup")).is_error

    async def test_network_means_the_tools_that_reach_the_network(
        self, tmp_path: Path, clock: Clock
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.net]
            tools = ["network"]
            calls = 1
            window = 3600

            [egress]
            private_exceptions = ["127.0.0.1"]
            """,
        )
        (tmp_path / "workspace" / "a.txt").write_text("text")
        with serving() as server:
            async with Runtime.from_config(path) as runtime:
                assert runtime.rate_limits is not None
                runtime.rate_limits.clock = clock
                first = await runtime.execute("http_request", {"url": server.url + "/ok"})
                assert not first.is_error, first.envelope()
                second = await runtime.execute("web_fetch", {"url": server.url + "/ok"})
                assert refused(second)["limit"] == "net"
                for _ in range(2):
                    read = await runtime.execute("file_read", {"path": "/workspace/a.txt"})
                    assert not read.is_error, read.envelope()
        assert server.hits == ["/ok"]

    async def test_an_mcp_server_with_the_network_is_network(
        self, tmp_path: Path, clock: Clock
    ) -> None:
        servers = Path(__file__).parent / "mcp_servers"
        entry = {"command": [sys.executable, str(servers / "basic.py")], "sandbox": False}
        config = {
            "mcp": {
                "servers": [
                    {"name": "online", "network": True, **entry},
                    {"name": "offline", **entry},
                ]
            },
            "rate_limits": {"net": {"tools": ["network"], "calls": 1, "window": 3600}},
        }
        (tmp_path / "workspace").mkdir()
        async with Runtime.from_config(parse_config(config, base_dir=tmp_path)) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert not (await runtime.execute("online__echo", {"text": "a"})).is_error
            assert refused(await runtime.execute("online__echo", {"text": "b"}))["limit"] == "net"
            for _ in range(2):
                assert not (await runtime.execute("offline__echo", {"text": "c"})).is_error


class TestConfig:
    def test_no_limits_costs_the_pipeline_nothing(self) -> None:
        runtime = Runtime.from_config(None, tools=[lookup])
        assert runtime.rate_limits is None
        assert runtime.pipeline.rate_limits is None

    @pytest.mark.parametrize(
        ("section", "problem"),
        [
            ('tools = ["lookup"]', "rate_limits.x: set calls (a call budget) or bytes"),
            ("tools = []\ncalls = 1", "rate_limits.x.tools: name at least one tool or class"),
            ('tools = ["Lookup"]\ncalls = 1', "'Lookup' is neither a tool name nor a class"),
            ('tools = ["lookup"]\ncalls = 0', "rate_limits.x.calls: Input should be greater"),
            ('tools = ["lookup"]\ncalls = 1\nwindow = -1', "rate_limits.x.window: Input should"),
            ('tools = ["lookup"]\nburst = 3\nbytes = 10', "burst needs calls"),
            ('tools = ["lookup"]\ncalls = 1\nper = ["team"]', "rate_limits.x.per.0: Input should"),
            ('tools = ["lookup"]\ncalls = 1\nper = ["user", "user"]', "names a key twice"),
            ('tools = ["read_only"]\nbytes = 100', "bytes: counted only for network tools"),
            ('tools = ["lookup"]\ncalls = 1\nevery = 3', "rate_limits.x.every: unknown key"),
        ],
    )
    def test_a_bad_limit_is_refused_naming_its_key(
        self, tmp_path: Path, section: str, problem: str
    ) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text(f"[rate_limits.x]\n{section}\n")
        with pytest.raises(ConfigError, match="rate_limits") as caught:
            Runtime.from_config(path, tools=[lookup])
        assert problem in str(caught.value)

    def test_a_bad_name_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "toolcage.toml"
        path.write_text('[rate_limits."a b"]\ntools = ["lookup"]\ncalls = 1\n')
        with pytest.raises(ConfigError, match="rate_limits"):
            Runtime.from_config(path, tools=[lookup])

    def test_an_unknown_tool_is_named_with_a_suggestion(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, '[rate_limits.x]\ntools = ["lookp"]\ncalls = 1\n')
        with pytest.raises(ConfigError) as caught:
            Runtime.from_config(path, tools=[lookup])
        assert "rate_limits.x.tools: unknown tool 'lookp' (did you mean 'lookup'?)" in str(
            caught.value
        )

    def test_a_byte_quota_on_a_tool_that_fetches_nothing_is_refused(self, tmp_path: Path) -> None:
        path = write_config(tmp_path, '[rate_limits.x]\ntools = ["lookup"]\nbytes = 100\n')
        with pytest.raises(ConfigError) as caught:
            Runtime.from_config(path, tools=[lookup])
        assert "rate_limits.x.bytes: counted only for the tools that fetch through" in str(
            caught.value
        )
        assert "'lookup' is not one" in str(caught.value)

    def test_the_counters_file_may_not_be_mounted_even_without_state_tools(
        self, tmp_path: Path
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [state]
            enabled = false
            url = "workspace/counters.db"

            [rate_limits.x]
            tools = ["lookup"]
            calls = 1
            """,
        )
        with pytest.raises(ConfigError, match=r"state\.url: .*counters\.db is inside the mounted"):
            Runtime.from_config(path, tools=[lookup])


@pytest.fixture
def libsql(tmp_path: Path) -> Iterator[LibsqlServer]:
    with LibsqlServer(tmp_path / "remote.db", token="counter-token") as server:  # noqa: S106
        yield server


class TestRemoteStore:
    async def test_the_bucket_lives_on_the_libsql_server(
        self, tmp_path: Path, clock: Clock, libsql: LibsqlServer
    ) -> None:
        path = write_config(
            tmp_path,
            f"""
            [state]
            url = "{libsql.url}"
            auth_token = "counter-token"

            [rate_limits.remote]
            tools = ["lookup"]
            calls = 2
            window = 10
            """,
        )
        for _ in range(2):  # two runtimes, one server: one budget
            async with Runtime.from_config(path, tools=[lookup]) as runtime:
                assert runtime.rate_limits is not None
                runtime.rate_limits.clock = clock
                assert not (await call(runtime, "lookup")).is_error
        async with Runtime.from_config(path, tools=[lookup]) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            assert refused(await call(runtime, "lookup"))["retry_after"] == 5.0
            clock.now += 5
            assert not (await call(runtime, "lookup")).is_error
        assert not (tmp_path / ".toolcage").exists()


def big_routes(size: int) -> dict[str, Any]:
    def body(handler: Any) -> None:
        data = b"y" * size
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        for start in range(0, len(data), 4096):
            handler.wfile.write(data[start : start + 4096])

    return {"/small": lambda h: _small(h), "/big": body}


def _small(handler: Any) -> None:
    data = b"z" * 1000
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.fixture
def big_server() -> Iterator[Server]:
    with serving(big_routes(300_000)) as server:
        yield server


class TestByteQuota:
    async def test_responses_are_counted_and_a_spent_quota_refuses_the_next_request(
        self, tmp_path: Path, clock: Clock, big_server: Server
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.bytes]
            tools = ["network"]
            per = ["user"]
            bytes = 2500
            window = 60

            [egress]
            private_exceptions = ["127.0.0.1"]
            """,
        )
        async with Runtime.from_config(path) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            url = big_server.url + "/small"
            for _ in range(2):
                result = await runtime.execute("http_request", {"url": url})
                assert not result.is_error, result.envelope()
            clock.now += 20
            third = await runtime.execute("http_request", {"url": url})
            assert third.is_error  # 2000 of 2500 spent: this response is cut
            assert "cut after" in third.envelope()["message"]
            fourth = await runtime.execute("http_request", {"url": url})
            details = refused(fourth)
            assert (details["limit"], details["bytes"]) == ("bytes", 2500)
            assert details["retry_after"] == 40.0
            assert "retry after 40 s" in fourth.envelope()["message"]
            other = await runtime.execute("http_request", {"url": url}, as_user("bob"))
            assert not other.is_error, other.envelope()
            clock.now += 40
            again = await runtime.execute("http_request", {"url": url})
            assert not again.is_error, again.envelope()
        assert big_server.hits.count("/small") == 5

    async def test_a_response_that_would_overspend_is_cut_with_a_clear_error(
        self, tmp_path: Path, clock: Clock, big_server: Server
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.bytes]
            tools = ["http_request"]
            bytes = 100000
            window = 60

            [egress]
            private_exceptions = ["127.0.0.1"]

            [egress.tools.http_request]
            max_response_bytes = 1000000
            """,
        )
        async with Runtime.from_config(path) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            result = await runtime.execute("http_request", {"url": big_server.url + "/big"})
            envelope = result.envelope()
            assert envelope["error_type"] == "permission_denied", envelope
            assert envelope["message"].startswith("the response was cut after ")
            spent = "byte quota 'bytes' spent for the host (100,000 response bytes per 60 s)"
            assert spent in envelope["message"]
            assert "retry after 60 s" in envelope["message"]
            refused(await runtime.execute("http_request", {"url": big_server.url + "/small"}))
        assert big_server.hits == ["/big"]

    async def test_a_spent_quota_is_the_rate_limit_policys_decision(
        self, tmp_path: Path, clock: Clock, big_server: Server
    ) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.bytes]
            tools = ["http_request"]
            bytes = 1500
            window = 60

            [egress]
            private_exceptions = ["127.0.0.1"]

            [audit]
            path = "audit.jsonl"
            """,
        )
        async with Runtime.from_config(path) as runtime:
            assert runtime.rate_limits is not None
            runtime.rate_limits.clock = clock
            url = big_server.url + "/small"
            for _ in range(3):
                await runtime.execute("http_request", {"url": url})
        first, cut, spent = audited_calls(tmp_path)
        assert [d["policy"] for d in first["decisions"]] == ["egress"]
        egress, cut_by_quota = cut["decisions"]
        assert (egress["policy"], egress["allowed"]) == ("egress", True)
        assert cut_by_quota["policy"] == "rate_limit"
        assert not cut_by_quota["allowed"]
        assert cut_by_quota["reason"].startswith("the response was cut after ")
        [quota] = spent["decisions"]
        assert (quota["policy"], quota["allowed"]) == ("rate_limit", False)
        assert "byte quota 'bytes' spent" in quota["reason"]


CHILD = """
import json, sys
import anyio
from toolcage.runtime import Runtime, SafetyTier, tool

@tool(safety_tier=SafetyTier.READ_ONLY)
def lookup(word: str) -> str:
    \"\"\"Look a word up.\"\"\"
    return word

async def main() -> None:
    async with Runtime.from_config(sys.argv[1], tools=[lookup]) as runtime:
        runtime.rate_limits.clock = lambda: 1_000_000.0
        print("ready", flush=True)
        sys.stdin.readline()
        admitted = 0
        for _ in range(int(sys.argv[2])):
            result = await runtime.execute("lookup", {"word": "x"})
            admitted += not result.is_error
        print(json.dumps(admitted), flush=True)

anyio.run(main)
"""


class TestAcrossProcesses:
    def test_two_processes_sharing_a_store_share_the_budget_exactly(self, tmp_path: Path) -> None:
        path = write_config(
            tmp_path,
            """
            [rate_limits.shared]
            tools = ["lookup"]
            calls = 50
            window = 3600
            """,
        )
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        children = [
            subprocess.Popen(
                [sys.executable, str(script), str(path), "40"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
            )
            for _ in range(2)
        ]
        try:
            for child in children:  # both built, then both call at once
                assert child.stdout is not None
                assert child.stdout.readline().strip() == "ready"
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            admitted = [json.loads(child.communicate(timeout=120)[0]) for child in children]
        finally:
            for child in children:
                child.kill()
                child.wait()
        assert sum(admitted) == 50, admitted
        assert all(count >= 10 for count in admitted), admitted
