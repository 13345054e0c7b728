"""Instances prepared ahead: each serves one call, of its own principal and mounts only.

The runtime is driven through ``Runtime.execute``; a spy on :meth:`Spares.take` records
which calls ran in a spare (it changes nothing), and the engine's ``parked()`` is polled
until the spares of a call are ready.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from toolcage.runtime import Runtime, ToolExecutionContext
from toolcage.runtime.wasm import _spares
from toolcage.runtime.wasm._component_engine import SPARES
from toolcage.runtime.wasm._component_runner import ComponentRunner
from toolcage.runtime.wasm._engine import Parked, WasmEngine
from toolcage.runtime.wasm._python_exec import PythonExecTool
from toolcage.runtime.wasm._spares import Prepared, SpareKey, Spares

from tests.adversarial.principals._cast import ADA, ADA_REVIEWER, BOB

from ._doors import CTX, python, run, running_guests, text

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("python_exec_compiled")]

PER_USER = """
[[mounts.areas]]
host = "users/{user}/workspace"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
create = true
"""

WORKSPACE = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "rw", side_effecting = "rw" }
create = true
"""


def runner_of(runtime: Runtime) -> ComponentRunner:
    tool = runtime.registry.get("python_exec")
    assert isinstance(tool, PythonExecTool)
    return tool.runner


def engine_of(runtime: Runtime) -> WasmEngine:
    return runner_of(runtime).engine


async def until(condition: Callable[[], bool]) -> None:
    """Poll: spares are made in a thread of their own after a call."""
    while not condition():  # noqa: ASYNC110 (set by another thread)
        await anyio.sleep(0.005)


async def parked(runtime: Runtime, count: int) -> None:
    """Wait until ``count`` spares are parked."""
    engine = engine_of(runtime)
    await until(lambda: engine.parked() >= count)


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """(owner, whether a spare was taken) of each call, in order."""
    found: list[tuple[str, bool]] = []
    take = Spares.take

    def spy(self: Spares, key: SpareKey) -> Prepared | None:
        spare = take(self, key)
        found.append((key.owner, spare is not None))
        return spare

    monkeypatch.setattr(_spares.Spares, "take", spy)
    return found


class TestOnePrincipal:
    async def test_a_call_after_the_first_runs_in_a_spare(
        self, tmp_path: Path, taken: list[tuple[str, bool]]
    ) -> None:
        async with python(tmp_path, WORKSPACE) as runtime:
            assert text(await run(runtime, "print('a')")) == "a"
            await parked(runtime, 1)
            assert text(await run(runtime, "print('b')")) == "b"  # fresh capture per call
        assert [hit for _, hit in taken] == [False, True]

    async def test_the_deadline_runs_from_the_call_not_from_the_spare(
        self, tmp_path: Path, taken: list[tuple[str, bool]]
    ) -> None:
        body = WORKSPACE + "\n[tools.python_exec]\ntimeout = 1\n"
        async with python(tmp_path, body) as runtime:
            assert text(await run(runtime, "print(1)")) == "1"
            await parked(runtime, 1)
            await anyio.sleep(1.5)  # the spare is now older than the call's timeout
            assert text(await run(runtime, "print(2)")) == "2"
            stopped = await run(runtime, "while True: pass")
            assert stopped.error is not None
            assert stopped.error.kind.value == "timeout"
        assert [hit for _, hit in taken] == [False, True, True]

    async def test_a_replaced_workspace_is_the_one_a_call_sees(
        self, tmp_path: Path, taken: list[tuple[str, bool]]
    ) -> None:
        async with python(tmp_path, WORKSPACE) as runtime:
            assert text(await run(runtime, "open('old.txt', 'w').write('old')")) == "3"
            await parked(runtime, 1)
            shutil.rmtree(tmp_path / "ws")
            (tmp_path / "ws").mkdir()
            (tmp_path / "ws" / "new.txt").write_text("new")
            listed = await run(runtime, "sorted(__import__('os').listdir('/workspace'))")
            assert text(listed) == "['new.txt']"
        assert [hit for _, hit in taken] == [False, False]  # the spare was dropped


class TestPrincipals:
    async def test_a_spare_never_serves_another_principal(
        self, tmp_path: Path, taken: list[tuple[str, bool]]
    ) -> None:
        ada, reviewer, bob = (ctx.principal.key() for ctx in (ADA, ADA_REVIEWER, BOB))
        async with python(tmp_path, PER_USER) as runtime:
            spares = runner_of(runtime).spares
            wrote = await run(runtime, "open('note.txt', 'w').write('ada')", ADA)
            assert not wrote.is_error, wrote.output_text
            await until(lambda: spares.parked(ada) >= 1)
            # The same user through another agent: the same mounts, another principal.
            seen = await run(runtime, "open('note.txt').read()", ADA_REVIEWER)
            assert text(seen) == "'ada'"
            await parked(runtime, 1)  # none of them bob's: he has not called
            seen = await run(runtime, "__import__('os').listdir('.')", BOB)
            assert text(seen) == "[]"
            await until(lambda: spares.parked(bob) >= 1)
            seen = await run(runtime, "__import__('os').listdir('.')", BOB)
            assert text(seen) == "[]"
        assert taken == [(ada, False), (reviewer, False), (bob, False), (bob, True)]
        assert not (tmp_path / "users" / "bob" / "workspace" / "note.txt").exists()


class TestBounds:
    async def test_sixteen_callers_at_once_with_spares_parked(self, tmp_path: Path) -> None:
        results: dict[int, str] = {}
        async with python(tmp_path, WORKSPACE) as runtime:
            await run(runtime, "pass")
            await parked(runtime, 1)

            async def caller(number: int, ctx: ToolExecutionContext) -> None:
                for _ in range(3):
                    results[number] = text(await run(runtime, f"print({number})", ctx))

            async with anyio.create_task_group() as tasks:
                for number in range(16):
                    tasks.start_soon(caller, number, BOB if number % 2 else CTX)
            engine = engine_of(runtime)
            assert engine.parked() <= SPARES
        assert results == {number: str(number) for number in range(16)}
        assert engine.parked() == 0
        assert engine.running() == 0

    async def test_closing_drops_the_parked_spares(self, tmp_path: Path) -> None:
        async with python(tmp_path, WORKSPACE) as runtime:
            await run(runtime, "pass")
            await parked(runtime, 1)
            engine = engine_of(runtime)
            assert running_guests(runtime) == 0  # parked is not running
        assert engine.parked() == 0
        assert engine.running() == 0
        assert engine.closed


class TestEngineParking:
    def test_whoever_removes_a_parked_spare_owns_it(self) -> None:
        dropped: list[str] = []

        class Spare(Parked):
            def __init__(self, name: str) -> None:
                self.name = name

            def drop(self) -> None:
                dropped.append(self.name)

        engine = WasmEngine()
        taken_back, left = Spare("taken"), Spare("left")
        assert engine.park(taken_back)
        assert engine.park(left)
        assert engine.parked() == 2
        assert engine.running() == 0
        assert engine.unpark(taken_back)
        assert engine.close()
        assert dropped == ["left"]
        assert not engine.unpark(left)  # close dropped it: not the caller's to run
        assert not engine.park(Spare("late"))
        assert engine.parked() == 0
