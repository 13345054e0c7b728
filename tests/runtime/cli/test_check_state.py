"""``toolcage check``'s ``state`` line: damage found by SQLite's quick check, and the cause
and fix of a store that cannot be used -- read-only, newer, a dangling link."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from ...host_bindings.store.disks import NOBODY, needs_root, read_only_view, toolcage_as
from .test_cli import toolcage

PAGE = 4096


def setup(root: Path, store: Path) -> Path:
    """A config in ``root`` whose store is ``store``, holding notes over many pages."""
    config = root / "toolcage.toml"
    config.write_text(f'[state]\nurl = "{store}"\n\n[shell]\nmode = "disabled"\n')
    words = " ".join(f"word{i}" for i in range(3000))
    done = toolcage("call", "memory_save", json.dumps({"content": words}), "--config", str(config))
    assert json.loads(done.stdout)["status"] == "success", done.stdout + done.stderr
    return config


def state_line(done: object) -> str:
    stdout = str(getattr(done, "stdout", ""))
    [line] = [line for line in stdout.splitlines() if line.split()[1:2] == ["state"]]
    return line


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="toolcage-check-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


class TestCheckState:
    def test_a_whole_store_passes(self, tmp_path: Path) -> None:
        config = setup(tmp_path, tmp_path / "state.db")
        line = state_line(toolcage("check", "--config", str(config)))
        assert line.startswith("ok"), line

    def test_damaged_pages_fail_with_the_way_to_recover(self, tmp_path: Path) -> None:
        store = tmp_path / "state.db"
        config = setup(tmp_path, store)
        pages = store.stat().st_size // PAGE
        assert pages > 8
        with store.open("r+b") as out:  # the middle of every page past the schema's
            for page in range(4, pages):
                out.seek(page * PAGE + 100)
                out.write(b"\xa5" * 400)
        done = toolcage("check", "--config", str(config))
        line = state_line(done)
        assert line.startswith("FAIL"), line
        assert "damaged" in line
        assert f"sqlite3 {store} .recover" in line
        assert done.returncode == 1

    def test_a_newer_schema_says_to_upgrade(self, tmp_path: Path) -> None:
        store = tmp_path / "state.db"
        config = setup(tmp_path, store)
        conn = apsw.Connection(str(store))
        conn.execute("UPDATE store_meta SET value = '99' WHERE key = 'schema_version'")
        conn.close()
        line = state_line(toolcage("check", "--config", str(config)))
        assert line.startswith("FAIL"), line
        assert "schema version 99" in line
        assert "to fix: upgrade toolcage" in line

    def test_a_dangling_link_is_refused_and_nothing_is_made(self, tmp_path: Path) -> None:
        target = tmp_path / "gone" / "deeper" / "state.db"
        (tmp_path / "state.db").symlink_to(target)
        (tmp_path / "toolcage.toml").write_text(
            '[state]\nurl = "state.db"\n\n[shell]\nmode = "disabled"\n'
        )
        line = state_line(toolcage("check", "--config", str(tmp_path / "toolcage.toml")))
        assert line.startswith("FAIL"), line
        assert f"symbolic link to {target}, whose directory does not exist" in line
        assert f"to fix: create {target.parent}" in line
        assert not (tmp_path / "gone").exists()

    @needs_root
    def test_a_read_only_mount_says_to_remount(self, tmp_path: Path) -> None:
        data = tmp_path / "data"
        data.mkdir()
        setup(tmp_path, data / "state.db")
        with read_only_view(data, tmp_path / "ro") as view:
            config = setup_config(tmp_path, view / "state.db")
            line = state_line(toolcage("check", "--config", str(config)))
        assert line.startswith("FAIL"), line
        assert f"{view} is on a read-only file system" in line
        assert "to fix: remount it read-write" in line

    @needs_root
    def test_a_directory_the_uid_cannot_write_says_to_give_it(self, open_tmp: Path) -> None:
        data, home = open_tmp / "data", open_tmp / "home"
        data.mkdir()
        home.mkdir()
        setup(home, data / "state.db")
        for path in (home, *home.rglob("*"), data / "state.db"):
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
        line = state_line(toolcage_as(NOBODY, "check", "--config", "toolcage.toml", cwd=home))
        assert line.startswith("FAIL"), line
        assert f"the directory {data} is not writable by uid {NOBODY}" in line
        assert f"to fix: chown {NOBODY} {data}" in line


def setup_config(root: Path, store: Path) -> Path:
    config = root / "toolcage.toml"
    config.write_text(f'[state]\nurl = "{store}"\n\n[shell]\nmode = "disabled"\n')
    return config
