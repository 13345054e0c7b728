"""Concurrency modes: ``limited(N)`` and ``exclusive_by_type`` hold across every caller of a
runtime, waiting counts toward the deadline, and no permit outlives its call.

Overlap is proven with counters inside the tools and the gate's own count of waiting calls,
polled until they reach the expected state; nothing depends on how long anything takes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from toolcage.policies import ConfigError, load_config
from toolcage.runtime import (
    FunctionDecl,
    HttpModelClient,
    Runtime,
    SafetyTier,
    StopReason,
    ToolExecutionContext,
    ToolResult,
    UsageError,
    run_turn,
    tool,
)
from toolcage.runtime._concurrency import ResourceLocks
from toolcage.runtime.providers import UserMessage

from .fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply

pytestmark = pytest.mark.anyio


async def poll(condition: Callable[[], bool]) -> None:
    """Wait until ``condition()`` holds (the test's own timeout is the limit)."""
    while not condition():  # noqa: ASYNC110 - counters of several tasks and a gate
        await anyio.sleep(0.005)


@dataclass
class Probe:
    """Counts the calls inside the tools and holds them until :attr:`release` is set."""

    inside: dict[str, int] = field(default_factory=dict)
    most: int = 0
    release: anyio.Event = field(default_factory=anyio.Event)

    async def hold(self, key: str) -> None:
        self.inside[key] = self.inside.get(key, 0) + 1
        self.most = max(self.most, sum(self.inside.values()))
        try:
            await self.release.wait()
        finally:
            self.inside[key] -= 1

    def count(self, key: str | None = None) -> int:
        return sum(self.inside.values()) if key is None else self.inside.get(key, 0)


def limited_tools(probe: Probe) -> list[Any]:
    @tool(safety_tier=SafetyTier.READ_ONLY, concurrency="limited(2)")
    async def fetch(n: int) -> str:
        """Fetch something, at most two at once."""
        await probe.hold("fetch")
        return f"fetched {n}"

    @tool(safety_tier=SafetyTier.READ_ONLY)
    async def crawl(n: int) -> str:
        """Crawl something (parallel by declaration; the config limits it)."""
        await probe.hold("crawl")
        return f"crawled {n}"

    @tool(concurrency="limited(1)")
    async def flaky(fail: bool) -> str:
        """Fail when asked to."""
        if fail:
            raise RuntimeError("broken on purpose")
        return "fine"

    @tool(concurrency="limited(1)", timeout=0.2)
    async def stuck() -> str:
        """Never finish."""
        await anyio.sleep_forever()
        return "unreachable"

    return [fetch, crawl, flaky, stuck]


def note_tools(probe: Probe) -> list[Any]:
    @tool(concurrency="exclusive_by_type(note, path)")
    async def note_write(path: str, text: str) -> str:
        """Write a note, held until released."""
        await probe.hold(f"write:{path}")
        return "written"

    @tool(concurrency="exclusive_by_type(note, path)", timeout=0.3)
    async def note_touch(path: str) -> str:
        """Touch a note (quickly, or time out waiting)."""
        return "touched"

    return [note_write, note_touch]


class HeldFileWriter:
    """A host tool that writes through a path argument (so it defaults to exclusive by
    canonical path, type ``file``) and holds its call until the probe releases it."""

    safety_tier = SafetyTier.SIDE_EFFECTING
    timeout = 60.0
    path_arguments: Mapping[str, str] = {"path": "write"}

    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    def schema(self) -> FunctionDecl:
        return FunctionDecl(
            "held_file_writer",
            "Hold a file.",
            {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        )

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        await self.probe.hold(f"file:{args['path']}")
        return ToolResult.text("held")


CONFIG = """
[tools.crawl]
concurrency = "limited(1)"
"""


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
async def runtime(tmp_path: Path, probe: Probe) -> AsyncIterator[Runtime]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    tools = [*limited_tools(probe), *note_tools(probe), HeldFileWriter(probe)]
    async with Runtime.from_config(tmp_path / "toolcage.toml", tools=tools) as runtime:
        yield runtime


async def run_all(runtime: Runtime, calls: list[tuple[str, dict[str, Any]]]) -> list[ToolResult]:
    results: list[ToolResult | None] = [None] * len(calls)

    async def one(index: int) -> None:
        name, args = calls[index]
        results[index] = await runtime.execute(name, args)

    async with anyio.create_task_group() as group:
        for index in range(len(calls)):
            group.start_soon(one, index)
    return [r for r in results if r is not None]


class TestLimited:
    async def test_at_most_n_calls_run_at_once_and_the_rest_wait(
        self, runtime: Runtime, probe: Probe
    ) -> None:
        gates = runtime.pipeline.gates
        results: list[ToolResult] = []

        async def calls() -> None:
            results.extend(await run_all(runtime, [("fetch", {"n": n}) for n in range(5)]))

        async with anyio.create_task_group() as group:
            group.start_soon(calls)
            await poll(lambda: probe.count("fetch") == 2 and gates.waiting("fetch") == 3)
            probe.release.set()
        assert [r.output_text for r in results] == [f"fetched {n}" for n in range(5)]
        assert probe.most == 2
        assert gates.running("fetch") == gates.waiting("fetch") == 0

    async def test_the_config_limits_a_tool_declared_parallel(
        self, runtime: Runtime, probe: Probe
    ) -> None:
        gates = runtime.pipeline.gates
        crawl = runtime.registry.get("crawl")
        assert gates.mode("crawl", crawl).text == "limited(1)"
        async with anyio.create_task_group() as group:
            group.start_soon(run_all, runtime, [("crawl", {"n": n}) for n in range(3)])
            await poll(lambda: probe.count("crawl") == 1 and gates.waiting("crawl") == 2)
            probe.release.set()
        assert probe.most == 1

    async def test_a_call_cancelled_while_waiting_takes_no_permit(
        self, runtime: Runtime, probe: Probe
    ) -> None:
        gates = runtime.pipeline.gates
        async with anyio.create_task_group() as group:
            group.start_soon(runtime.execute, "crawl", {"n": 1})
            await poll(lambda: probe.count("crawl") == 1)
            with anyio.CancelScope() as waiter:

                async def cancel_once_waiting() -> None:
                    await poll(lambda: gates.waiting("crawl") == 1)
                    waiter.cancel()

                group.start_soon(cancel_once_waiting)
                await runtime.execute("crawl", {"n": 2})
            assert waiter.cancelled_caught
            await poll(lambda: gates.waiting("crawl") == 0)  # the abandoned wait has ended
            probe.release.set()
        result = await runtime.execute("crawl", {"n": 3})
        assert result.output_text == "crawled 3"
        assert probe.most == 1

    async def test_a_crash_gives_the_permit_back(self, runtime: Runtime) -> None:
        failed = await runtime.execute("flaky", {"fail": True})
        assert failed.envelope()["error_type"] == "execution_error"
        fine = await runtime.execute("flaky", {"fail": False})
        assert fine.output_text == "fine"
        assert runtime.pipeline.gates.running("flaky") == 0

    async def test_a_timeout_gives_the_permit_back(self, runtime: Runtime) -> None:
        gates = runtime.pipeline.gates
        for _ in range(2):  # the second call gets the permit the first one held
            result = await runtime.execute("stuck", {})
            envelope = result.envelope()
            assert envelope["error_type"] == "timeout"
            assert envelope["details"]["elapsed"] >= 0.2
            await poll(lambda: gates.running("stuck") == 0)
        assert gates.waiting("stuck") == 0


class TestExclusiveByType:
    async def test_calls_on_one_resource_never_overlap_across_tools(
        self, runtime: Runtime, probe: Probe
    ) -> None:
        gates = runtime.pipeline.gates
        async with anyio.create_task_group() as group:
            group.start_soon(runtime.execute, "note_write", {"path": "a", "text": "1"})
            await poll(lambda: probe.count("write:a") == 1)
            group.start_soon(runtime.execute, "note_write", {"path": "a", "text": "2"})
            await poll(lambda: gates.waiting("note_write") == 1)
            assert probe.count("write:a") == 1
            probe.release.set()
        assert probe.most == 1
        assert len(gates.resources) == 0

    async def test_calls_on_different_resources_overlap(
        self, runtime: Runtime, probe: Probe
    ) -> None:
        async with anyio.create_task_group() as group:
            for path in ("a", "b"):
                group.start_soon(runtime.execute, "note_write", {"path": path, "text": "x"})
            await poll(lambda: probe.count("write:a") == 1 and probe.count("write:b") == 1)
            probe.release.set()
        assert probe.most == 2

    async def test_a_call_that_times_out_waiting_holds_nothing(
        self, runtime: Runtime, probe: Probe
    ) -> None:
        gates = runtime.pipeline.gates
        async with anyio.create_task_group() as group:
            group.start_soon(runtime.execute, "note_write", {"path": "a", "text": "1"})
            await poll(lambda: probe.count("write:a") == 1)
            timed_out = await runtime.execute("note_touch", {"path": "a"})
            envelope = timed_out.envelope()
            assert envelope["error_type"] == "timeout"
            assert envelope["details"]["timeout"] == 0.3
            assert envelope["details"]["elapsed"] >= 0.3
            other = await runtime.execute("note_touch", {"path": "b"})
            assert other.output_text == "touched"
            await poll(lambda: gates.waiting("note_touch") == 0)
            probe.release.set()
        assert (await runtime.execute("note_touch", {"path": "a"})).output_text == "touched"
        assert len(gates.resources) == 0

    async def test_file_write_waits_for_a_writer_of_the_same_canonical_path(
        self, runtime: Runtime, probe: Probe, tmp_path: Path
    ) -> None:
        gates = runtime.pipeline.gates
        (tmp_path / "workspace" / "sub").mkdir()
        write = {"content": "new"}
        async with anyio.create_task_group() as group:
            group.start_soon(runtime.execute, "held_file_writer", {"path": "/workspace/a.txt"})
            await poll(lambda: probe.count("file:/workspace/a.txt") == 1)
            elsewhere = await runtime.execute("file_write", {**write, "path": "/workspace/b.txt"})
            assert not elsewhere.is_error, elsewhere.envelope()
            outcome: list[ToolResult] = []

            async def same_file() -> None:
                path = "/workspace/sub/../a.txt"
                outcome.append(await runtime.execute("file_write", {**write, "path": path}))

            group.start_soon(same_file)
            await poll(lambda: gates.waiting("file_write") == 1 or bool(outcome))
            assert not outcome, outcome[0].envelope()
            assert not (tmp_path / "workspace" / "a.txt").exists()
            probe.release.set()
        assert not outcome[0].is_error, outcome[0].envelope()
        assert (tmp_path / "workspace" / "a.txt").read_text() == "new"


class TestDeclaredModes:
    async def test_the_built_in_tools_default_sensibly(self, runtime: Runtime) -> None:
        gates = runtime.pipeline.gates

        def mode(name: str) -> str:
            return gates.mode(name, runtime.registry.get(name)).text

        for name in ("file_write", "file_edit", "file_delete"):
            assert mode(name) == "exclusive_by_type(file, path)"
        assert mode("file_read") == "parallel"
        assert mode("shell_exec") == "serial"
        assert mode("fetch") == "limited(2)"

    async def test_a_bad_mode_in_the_config_names_its_key(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text('[tools.file_read]\nconcurrency = "limited(0)"\n')
        with pytest.raises(ConfigError, match=r"tools\.file_read\.concurrency: .*limited\(N\)"):
            load_config(tmp_path / "toolcage.toml")

    async def test_a_mode_keyed_on_an_unknown_argument_is_refused_at_load(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "toolcage.toml").write_text(
            '[tools.file_write]\nconcurrency = "exclusive_by_type(file, dest)"\n'
        )
        with pytest.raises(ConfigError, match=r"tools\.file_write\.concurrency: .*'dest'"):
            Runtime.from_config(tmp_path / "toolcage.toml")

    async def test_a_tool_keyed_on_an_unknown_argument_is_refused_when_registered(
        self, runtime: Runtime
    ) -> None:
        @tool(concurrency="exclusive_by_type(note, target)")
        async def note_move(path: str) -> str:
            """Move a note."""
            return path

        with pytest.raises(UsageError, match=r"tool 'note_move': .*'target'"):
            runtime.register(note_move)
        assert "note_move" not in runtime.registry

    def test_a_bad_declared_mode_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError, match="sometimes"):

            @tool(concurrency="sometimes")
            def odd() -> str:
                """Odd."""
                return ""


class TestAcrossTurns:
    async def test_a_limit_holds_across_two_concurrent_turns(self, probe: Probe) -> None:
        tools = limited_tools(probe)
        script = [
            Reply("", [("c1", "fetch", json.dumps({"n": 1})), ("c2", "fetch", '{"n": 2}')]),
            Reply("done"),
        ]
        models = [FakeModel("anthropic", False, list(script)) for _ in range(2)]
        turns: list[Any] = []
        async with Runtime(tools=tools) as runtime:
            gates = runtime.pipeline.gates

            async def turn(model: FakeModel, session: str) -> None:
                with FakeModelServer(model) as base_url:
                    async with HttpModelClient.for_provider(
                        "anthropic", base_url=base_url, api_key=API_KEY, model=MODEL
                    ) as client:
                        ctx = ToolExecutionContext(session_id=session)
                        turns.append(
                            await run_turn(client, runtime, [UserMessage("Go.")], context=ctx)
                        )

            async with anyio.create_task_group() as group:
                group.start_soon(turn, models[0], "one")
                group.start_soon(turn, models[1], "two")
                await poll(lambda: probe.count("fetch") == 2 and gates.waiting("fetch") == 2)
                probe.release.set()
        assert [t.stop for t in turns] == [StopReason.COMPLETED] * 2
        assert probe.most == 2

    async def test_a_tool_declared_parallel_runs_beside_its_siblings(self, probe: Probe) -> None:
        @tool(concurrency="parallel")
        async def stamp(n: int) -> str:
            """Stamp something (it changes things, yet may run beside other calls)."""
            await probe.hold("stamp")
            return f"stamped {n}"

        @tool(safety_tier=SafetyTier.READ_ONLY, concurrency="serial")
        async def survey(n: int) -> str:
            """Read something, alone in its turn."""
            return f"surveyed {n}"

        calls = [("c1", "stamp", '{"n": 1}'), ("c2", "stamp", '{"n": 2}')]
        model = FakeModel("anthropic", False, [Reply("", calls), Reply("done")])
        async with Runtime(tools=[stamp, survey]) as runtime:
            gates = runtime.pipeline.gates
            assert not gates.runs_beside_siblings("survey", runtime.registry.get("survey"))
            with FakeModelServer(model) as base_url:
                async with (
                    HttpModelClient.for_provider(
                        "anthropic", base_url=base_url, api_key=API_KEY, model=MODEL
                    ) as client,
                    anyio.create_task_group() as group,
                ):
                    group.start_soon(run_turn, client, runtime, [UserMessage("Go.")])
                    await poll(lambda: probe.count("stamp") == 2)
                    probe.release.set()
        assert probe.most == 2


class TestResourceLocks:
    async def test_a_waiter_cancelled_as_it_is_handed_the_lock_passes_it_on(self) -> None:
        # The pipeline cancels a call's task natively (asyncio), as its deadline does.
        locks = ResourceLocks()
        resource = ("file", "/workspace/a.txt")
        await locks.acquire(resource)
        got: list[str] = []

        async def waiter(name: str) -> None:
            await locks.acquire(resource)
            got.append(name)
            locks.release(resource)

        loop = asyncio.get_running_loop()
        first = loop.create_task(waiter("b"))
        second = loop.create_task(waiter("c"))
        await poll(lambda: len(locks._held[resource]) == 2)
        locks.release(resource)  # handed to b ...
        first.cancel()  # ... which is cancelled before it resumes
        await asyncio.wait({first, second})
        assert first.cancelled()
        assert got == ["c"]
        assert len(locks) == 0
