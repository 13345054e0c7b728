"""The call's deadline binds the store's waits: a state tool whose database another
connection holds locked past the call's timeout reports ``timeout`` and has changed
nothing, while one whose lock is released in time succeeds -- through
``Runtime.from_config`` and ``execute``."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import apsw
import pytest
from toolcage.host_bindings._backends import _waits as waits
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult
from toolcage.runtime._deadline import abandoned_count

from .store.test_durability import count_notes

pytestmark = pytest.mark.anyio

CONFIG = """
[state]
url = "state.db"

[shell]
mode = "disabled"

[tools.memory_save]
timeout = 2

[tools.scratchpad_write]
timeout = 30
"""


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    async with Runtime.from_config(tmp_path / "toolcage.toml") as made:
        yield made


async def call(runtime: Runtime, tool: str, **args: object) -> ToolResult:
    return await runtime.execute(tool, args, ToolExecutionContext(user_id="ada", session_id="s"))


@contextmanager
def write_lock(path: Path) -> Iterator[apsw.Connection]:
    """Another connection holding the database's write lock (``BEGIN IMMEDIATE``)."""
    conn = apsw.Connection(str(path))
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        if not conn.getautocommit():
            conn.execute("ROLLBACK")
        conn.close()


async def settled() -> None:
    """Wait until no abandoned call is still running (its guest may yet commit)."""
    with anyio.fail_after(120):
        while True:
            if not abandoned_count():
                return
            await anyio.sleep(0.05)


class TestLockedDatabase:
    async def test_a_lock_held_past_the_deadline_is_a_timeout_that_saved_nothing(
        self, runtime: Runtime, tmp_path: Path
    ) -> None:
        store = tmp_path / "state.db"
        assert not (await call(runtime, "memory_save", content="first")).is_error
        with write_lock(store):
            began = time.monotonic()
            result = await call(runtime, "memory_save", content="second")
            held = time.monotonic() - began
        assert result.error is not None, result.output_text
        assert result.error.kind.value == "timeout", result.error.message
        assert held >= 1.5  # it waited for the lock, as long as the call allowed
        await settled()
        assert count_notes(store) == 1
        [hit] = json.loads(
            (await call(runtime, "memory_search", query="second first")).output_text.split("\n", 1)[
                0
            ]
        )
        assert hit["text"] == "first"

    async def test_a_lock_released_in_time_lets_the_call_succeed(
        self, runtime: Runtime, tmp_path: Path
    ) -> None:
        store = tmp_path / "state.db"
        assert not (await call(runtime, "scratchpad_write", items=["a"])).is_error
        results: list[ToolResult] = []
        with write_lock(store) as holder:
            async with anyio.create_task_group() as tasks:

                async def write() -> None:
                    results.append(await call(runtime, "scratchpad_write", items=["b"]))

                tasks.start_soon(write)
                await anyio.sleep(0.5)  # the call waits for the lock meanwhile
                holder.execute("ROLLBACK")
        [result] = results
        assert not result.is_error, result.output_text
        pad = json.loads((await call(runtime, "scratchpad_read")).output_text.split("\n", 1)[0])
        assert pad["items"] == ["b"]

    async def test_a_write_that_lands_past_the_deadline_is_reported_as_done(
        self, runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # Let a write commit up to a second after the call's deadline (the margin that
        # normally keeps commits before it), and land one there: its guest, which the
        # deadline would stop, is given the grace to report it -- never "timeout" beside a
        # saved note.
        monkeypatch.setattr(waits, "MARGIN", -1.0)
        store = tmp_path / "state.db"
        assert not (await call(runtime, "memory_save", content="first")).is_error
        results: list[ToolResult] = []
        with write_lock(store) as holder:
            began = time.monotonic()
            async with anyio.create_task_group() as tasks:

                async def save() -> None:
                    results.append(await call(runtime, "memory_save", content="late"))

                tasks.start_soon(save)
                await anyio.sleep(max(0.0, began + 2.3 - time.monotonic()))
                holder.execute("ROLLBACK")  # past the 2 s deadline: the save commits now
        [result] = results
        await settled()
        saved = count_notes(store)
        if result.is_error:
            assert result.error is not None
            assert result.error.kind.value == "timeout", result.error.message
            assert saved == 1
        else:
            assert saved == 2
