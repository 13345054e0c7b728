"""``python_exec`` as an unprivileged user (uid 65534) through ``toolcage call``: the call
works whether the per-user cache of compiled code can be written or not.

Without a usable cache (a home the user cannot write, or a cache directory of another
user's, whose sealing key it cannot read) the runtime compiles the component for the call
(seconds) and caches nothing; with one it writes the compiled code under its own key. The
calls run from ``tests/cli_as_nobody.py``, which imports as root what the call needs and then
drops to uid 65534 (the interpreter's files may be unreadable to it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534
HELPER = Path(__file__).parents[2] / "cli_as_nobody.py"
CODE = "import os\nprint(os.getcwd(), open('in.txt').read())\nopen('out.txt', 'w').write('x')"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="the drop to uid 65534 needs root"),
    # An uncached compile of the component takes seconds on a busy machine.
    pytest.mark.timeout(600),
    pytest.mark.usefixtures("python_exec_compiled"),
]


@pytest.fixture
def site() -> Iterator[Path]:
    """A directory all may enter (``tmp_path`` is root's only): a config mounting
    ``ws/`` (the unprivileged user's) at ``/workspace``."""
    root = Path(tempfile.mkdtemp(prefix="toolcage-nobody-"))
    try:
        root.chmod(0o755)
        workspace = root / "ws"
        workspace.mkdir()
        (workspace / "in.txt").write_text("read")
        for path in (workspace, workspace / "in.txt"):
            os.chown(path, NOBODY, NOBODY)
        # An uncached compile is charged to the first call's deadline: room for a busy machine.
        (root / "toolcage.toml").write_text(
            '[tools.python_exec]\ntimeout = 600\n\n[[mounts.areas]]\nhost = "ws"\n'
            'guest = "/workspace"\ntiers = { side_effecting = "rw" }\n'
        )
        yield root
    finally:
        shutil.rmtree(root)


def call_as_nobody(site: Path, home: Path) -> dict[str, object]:
    """``toolcage call python_exec`` as uid 65534 with ``home``; its envelope."""
    modules = site / "modules.json"
    arguments = [
        "call",
        "--config",
        str(site / "toolcage.toml"),
        "python_exec",
        json.dumps({"code": CODE}),
    ]
    for mode, extra in (("record", []), ("drop", [str(home)])):
        done = subprocess.run(
            [sys.executable, str(HELPER), mode, str(modules), *extra, "--", *arguments],
            capture_output=True,
            text=True,
            cwd=site,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"{mode}: {done.stdout}{done.stderr}"
        if mode == "record":
            (site / "ws" / "out.txt").unlink()  # root's
    envelope: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return envelope


def cache_of(home: Path) -> Path:
    return home / ".cache" / "toolcage" / "wasm"


class TestAsNobody:
    def test_a_home_it_cannot_write_costs_a_compile_not_the_call(self, site: Path) -> None:
        home = site / "home"
        home.mkdir(mode=0o755)  # root's
        envelope = call_as_nobody(site, home)
        assert envelope["status"] == "success", envelope
        assert envelope["result"] == "/workspace read\n1"
        assert (site / "ws" / "out.txt").stat().st_uid == NOBODY
        assert not (home / ".cache").exists()

    def test_another_users_cache_is_not_used(self, site: Path) -> None:
        home = site / "home"
        cache = cache_of(home)
        cache.mkdir(parents=True)
        (cache / "key").write_bytes(os.urandom(32))
        (cache / "key").chmod(0o600)  # root's key: unreadable to uid 65534
        os.chown(home, NOBODY, NOBODY)
        envelope = call_as_nobody(site, home)
        assert envelope["status"] == "success", envelope
        assert envelope["result"] == "/workspace read\n1"
        assert sorted(path.name for path in cache.iterdir()) == ["key"]

    def test_its_own_cache_is_written_under_its_own_key(self, site: Path) -> None:
        home = site / "home"
        home.mkdir()
        os.chown(home, NOBODY, NOBODY)
        envelope = call_as_nobody(site, home)
        assert envelope["status"] == "success", envelope
        entries = list(cache_of(home).glob("*.component.cwasm"))
        assert len(entries) == 1
        assert {path.stat().st_uid for path in cache_of(home).iterdir()} == {NOBODY}
        assert (cache_of(home) / "key").stat().st_mode & 0o077 == 0
