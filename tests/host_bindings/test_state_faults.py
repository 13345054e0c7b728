"""The state tools on a store whose disk fails them: full, read-only (for root and for an
unprivileged uid), a schema written by a newer toolcage, a dangling link -- through
``Runtime.from_config`` and ``execute`` (and ``toolcage call`` for another uid)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import apsw
import pytest
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

from .store.disks import NOBODY, fill, needs_root, read_only_view, tmpfs, toolcage_as

pytestmark = pytest.mark.anyio


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A directory every uid can reach (pytest's own is its owner's only)."""
    path = Path(tempfile.mkdtemp(prefix="toolcage-store-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def give_away(*paths: Path) -> None:
    """Make ``paths`` (and whatever is below them) the unprivileged uid's."""
    for path in paths:
        os.chown(path, NOBODY, NOBODY)
        for below in path.rglob("*") if path.is_dir() else ():
            os.chown(below, NOBODY, NOBODY, follow_symlinks=False)


def config(root: Path, store: Path) -> Path:
    path = root / "toolcage.toml"
    path.write_text(f'[state]\nurl = "{store}"\n\n[shell]\nmode = "disabled"\n')
    return path


@asynccontextmanager
async def runtime_on(root: Path, store: Path) -> AsyncIterator[Runtime]:
    async with Runtime.from_config(config(root, store)) as runtime:
        yield runtime


async def call(runtime: Runtime, tool: str, **args: Any) -> ToolResult:
    ctx = ToolExecutionContext(user_id="ada", session_id="s1")
    return await runtime.execute(tool, args, ctx)


async def ok(runtime: Runtime, tool: str, **args: Any) -> Any:
    result = await call(runtime, tool, **args)
    assert not result.is_error, result.output_text
    return json.loads(result.output_text.split("\n", 1)[0])


async def fails(runtime: Runtime, tool: str, **args: Any) -> str:
    result = await call(runtime, tool, **args)
    assert result.is_error, result.output_text
    assert result.error is not None
    assert result.error.kind.value == "execution_error", result.error.message
    return result.error.message


TEA_DAILY = {"goal": "buy tea", "cadence_type": "interval", "cadence_value": "1d"}


async def seed(root: Path, store: Path) -> str:
    """A store with one note and a scratchpad, closed cleanly; the note's id."""
    async with runtime_on(root, store) as runtime:
        saved = await ok(runtime, "memory_save", content="Ada drinks green tea")
        await ok(runtime, "scratchpad_write", items=["buy lemons"])
        await ok(runtime, "schedule_create", **TEA_DAILY)
    return str(saved["note_id"])


async def reads_work(runtime: Runtime, note_id: str) -> None:
    [hit] = await ok(runtime, "memory_search", query="tea")
    assert hit["note_id"] == note_id
    assert (await ok(runtime, "scratchpad_read"))["items"] == ["buy lemons"]
    [schedule] = (await ok(runtime, "schedule_search"))["schedules"]
    assert schedule["goal"] == "buy tea"


@needs_root
class TestFullDisk:
    async def test_a_new_runtime_reads_and_refuses_writes_naming_the_full_disk(
        self, tmp_path: Path
    ) -> None:
        with tmpfs(tmp_path / "disk") as disk:
            note_id = await seed(tmp_path, disk / "state.db")
            filler = fill(disk)
            async with runtime_on(tmp_path, disk / "state.db") as runtime:
                await reads_work(runtime, note_id)
                message = await fails(runtime, "memory_save", content="more tea")
                assert f"the file system holding {disk} is full" in message
                assert "cannot be opened" not in message
                filler.unlink()  # space again: the same runtime writes
                await ok(runtime, "memory_save", content="more tea")
                assert len(await ok(runtime, "memory_search", query="tea")) == 2

    async def test_a_disk_that_fills_while_the_runtime_runs_keeps_reads_going(
        self, tmp_path: Path
    ) -> None:
        with tmpfs(tmp_path / "disk") as disk:
            async with runtime_on(tmp_path, disk / "state.db") as runtime:
                saved = await ok(runtime, "memory_save", content="Ada drinks green tea")
                await ok(runtime, "scratchpad_write", items=["buy lemons"])
                await ok(runtime, "schedule_create", **TEA_DAILY)
                fill(disk)
                message = await fails(runtime, "memory_save", content=" ".join(["tea"] * 3000))
                assert f"the file system holding {disk} is full" in message
                await reads_work(runtime, saved["note_id"])


@needs_root
class TestReadOnly:
    async def test_a_read_only_mount_reads_and_refuses_writes_naming_it(
        self, tmp_path: Path
    ) -> None:
        data = tmp_path / "data"
        data.mkdir()
        note_id = await seed(tmp_path, data / "state.db")
        before = (data / "state.db").read_bytes()
        with read_only_view(data, tmp_path / "ro") as view:
            async with runtime_on(tmp_path, view / "state.db") as runtime:
                await reads_work(runtime, note_id)
                message = await fails(runtime, "scratchpad_write", items=["x"])
                assert f"{view} is on a read-only file system" in message
        assert (data / "state.db").read_bytes() == before

    def test_a_uid_that_cannot_write_the_directory_reads_and_is_told_why(
        self, open_tmp: Path
    ) -> None:
        data, home = open_tmp / "data", open_tmp / "home"
        data.mkdir()
        home.mkdir()
        config(home, data / "state.db")
        calls = [
            ("memory_save", {"content": "Ada drinks green tea"}),
            ("scratchpad_write", {"items": ["buy lemons"]}),
        ]
        for tool, args in calls:
            assert (
                toolcage_as(
                    0, "call", tool, json.dumps(args), "--config", "toolcage.toml", cwd=home
                ).returncode
                == 0
            )
        give_away(home, data / "state.db")
        data.chmod(0o755)  # root's: nobody can neither make -wal nor -shm there
        done = toolcage_as(
            NOBODY,
            "call",
            "memory_search",
            '{"query": "tea"}',
            "--config",
            "toolcage.toml",
            cwd=home,
        )
        assert json.loads(done.stdout)["status"] == "success", done.stdout + done.stderr
        assert "Ada drinks green tea" in done.stdout
        done = toolcage_as(
            NOBODY, "call", "memory_save", '{"content": "x"}', "--config", "toolcage.toml", cwd=home
        )
        answer = json.loads(done.stdout)
        assert answer["status"] == "error", done.stdout
        assert f"the directory {data} is not writable by uid {NOBODY}" in answer["message"]

    def test_a_uid_that_cannot_write_the_file_reads_and_is_told_why(self, open_tmp: Path) -> None:
        home = open_tmp / "home"
        home.mkdir()
        config(home, open_tmp / "state.db")
        done = toolcage_as(
            0,
            "call",
            "memory_save",
            '{"content": "Ada drinks green tea"}',
            "--config",
            "toolcage.toml",
            cwd=home,
        )
        assert done.returncode == 0, done.stdout
        give_away(open_tmp)
        (open_tmp / "state.db").chmod(0o400)
        done = toolcage_as(
            NOBODY,
            "call",
            "memory_search",
            '{"query": "tea"}',
            "--config",
            "toolcage.toml",
            cwd=home,
        )
        assert "Ada drinks green tea" in done.stdout, done.stdout + done.stderr
        done = toolcage_as(
            NOBODY, "call", "memory_save", '{"content": "x"}', "--config", "toolcage.toml", cwd=home
        )
        message = json.loads(done.stdout)["message"]
        assert f"{open_tmp / 'state.db'} is not writable by uid {NOBODY}" in message


class TestRefusedStores:
    async def test_a_schema_from_a_newer_toolcage_is_named_and_left_alone(
        self, tmp_path: Path
    ) -> None:
        store = tmp_path / "state.db"
        await seed(tmp_path, store)
        conn = apsw.Connection(str(store))
        conn.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
        conn.close()
        before = store.read_bytes()
        async with runtime_on(tmp_path, store) as runtime:
            message = await fails(runtime, "memory_search", query="tea")
        assert "schema version 99, newer than this toolcage's" in message
        assert store.read_bytes() == before

    async def test_a_dangling_link_is_refused_and_nothing_is_made_where_it_points(
        self, tmp_path: Path
    ) -> None:
        target = tmp_path / "gone" / "deeper" / "state.db"
        (tmp_path / "state.db").symlink_to(target)
        async with runtime_on(tmp_path, tmp_path / "state.db") as runtime:
            message = await fails(runtime, "memory_search", query="tea")
        assert f"is a symbolic link to {target}, whose directory does not exist" in message
        assert not (tmp_path / "gone").exists()
