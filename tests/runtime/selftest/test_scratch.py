"""The scratch world: a selftest attacks copies, never the operator's own directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolcage.policies import load_config
from toolcage.runtime.selftest import run_selftest
from toolcage.runtime.selftest._scratch import scratch_config

CONFIG = """
[[mounts.areas]]
host = "data"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }

[[mounts.areas]]
host = "users/{user}/shared"
guest = "/shared"
tiers = { read_only = "ro", side_effecting = "rw" }
create = true

[shell]
workspace = "data"

[state]
url = "state/state.db"

[state.vault]
dir = "vault"

[secrets.api]
from_file = "secret.txt"
hosts = ["api.example.com"]

[agents.reviewer]
tools = ["file_read", "file_list", "memory_search", "memory_save"]
"""


def operator_world(root: Path) -> Path:
    """The operator's directories, with files the attacks would love to change."""
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "notes.txt").write_text("the operator's notes\n")
    (root / "data" / "sub" / "deep.bin").write_bytes(bytes(range(256)))
    (root / "data" / "link").symlink_to("notes.txt")
    (root / "users" / "selftest-ada" / "shared").mkdir(parents=True)
    (root / "users" / "selftest-ada" / "shared" / "hers.txt").write_text("ada's own")
    (root / "vault").mkdir()
    (root / "vault" / "item").write_text("vault bytes")
    (root / "secret.txt").write_text("the real secret")
    config = root / "toolcage.toml"
    config.write_text(CONFIG)
    return config


def snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every entry below ``root``: mode, modification time and bytes (a link's target)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            if path.is_symlink():
                content = os.readlink(path).encode()
            elif path.is_file():
                content = path.read_bytes()
            else:
                content = b""
            found[str(path.relative_to(root))] = (info.st_mode, info.st_mtime_ns, content)
    return found


class TestScratchConfig:
    def test_every_host_path_is_moved_and_every_secret_replaced(self, tmp_path: Path) -> None:
        config = load_config(operator_world(tmp_path))
        scratch = scratch_config(config)
        try:
            moved = scratch.config
            assert all(str(area.host).startswith(str(scratch.root)) for area in moved.mounts.areas)
            assert str(moved.mounts.areas[1].host).endswith("/{user}/shared")  # still per user
            assert str(moved.shell.workspace) == str(moved.mounts.areas[0].host)
            assert moved.state.url == str(scratch.root / "state" / "state.db")
            assert moved.state.vault.dir == scratch.root / "vault"
            value = scratch.secret_values["api"]
            assert value != "the real secret"
            assert moved.secrets["api"].from_file is not None
            assert moved.secrets["api"].from_file.read_text() == value
            assert (scratch.outside / "secret.txt").read_text() == scratch.canary
        finally:
            scratch.remove()
        assert not scratch.root.exists()


@pytest.mark.anyio
class TestRun:
    async def test_the_operators_directories_are_byte_identical(self, tmp_path: Path) -> None:
        config = operator_world(tmp_path)
        before = snapshot(tmp_path)
        report = await run_selftest(config)
        assert report.passed, report.text()
        assert {f.attack for f in report.findings} >= {"paths", "shell", "principals"}
        assert snapshot(tmp_path) == before
