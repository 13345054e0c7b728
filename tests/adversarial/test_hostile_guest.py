"""WASI's own wall: a hostile guest of ours against a read-only and a read-write preopen.

The path policy keeps well-behaved tools' arguments inside the mounts; a buggy or hostile
guest skips it and calls WASI directly. ``guests/hostile_fs.c`` tries to change a read-only
preopen (write, truncate-on-open, create, rename, unlink, mkdir, timestamps, links in both
directions) while a read-write preopen exists in the same instance, and to leave its
preopens (``..``, absolute paths, symlinks out). Every attempt must fail and nothing on the
host may change.

The preopens are made the way the runner makes them: ``WasiConfig.preopen_dir(host, guest,
fs_mutable)`` with ``fs_mutable=False`` for a read-only mount. wasmtime 50.0.1 postdates
the fixes of the two WASI advisories of exactly this kind: GHSA-2r75-cxrj-cmph
/ CVE-2026-47261 (``path_open`` with ``O_TRUNC`` truncated a file of a read-only preopen;
affected wasmtime-wasi 37.0.0 up to 44.0.1, fixed in 44.0.2 and 45.0.0, May 2026) and
GHSA-4ch3-9j33-3pmj / CVE-2026-58494 (a read-only file hard-linked or renamed into a
writable preopen could be written; fixed in 24.0.11, 36.0.12, 45.0.3 and 46.0.1, June
2026). ``open_rdonly_trunc``, ``link_ro_into_rw`` and ``rename_ro_to_rw`` below are those
attacks. ``TestHostileGuestInTheRunner`` runs the same guest under the tool runner, with
preopens granted by a :class:`MountPolicy`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import wasmtime
from toolcage.policies import MountPolicy, Principal, load_config
from toolcage.runtime.wasm import GuestLimits, WasmEngine, WasmToolRunner

from ._guests import GuestRunner, build_guest
from ._tree import snapshot

pytestmark = pytest.mark.adversarial

SECRET = "hostile-guest-sentinel"  # noqa: S105 (a sentinel, not a password)

EXPECTED_ATTEMPTS = {
    "write_on_rdonly_fd",
    "ftruncate_on_rdonly_fd",
    "futimens_on_ro_file",
    "fcntl_setfl_append",
    "open_wronly",
    "open_rdwr",
    "open_trunc",
    "open_rdonly_trunc",
    "open_append",
    "open_creat",
    "open_creat_excl",
    "open_creat_rdonly",
    "truncate",
    "rename_within_ro",
    "rename_ro_to_rw",
    "rename_rw_over_ro",
    "rename_dir_ro_to_rw",
    "unlink",
    "unlink_inner",
    "rmdir",
    "mkdir",
    "symlink_in_ro",
    "link_rw_into_ro",
    "link_ro_into_rw",
    "utimensat",
    "utimensat_dir",
    "read_dotdot_ro",
    "read_dotdot_rw",
    "read_dotdot_deep",
    "read_absolute_host",
    "read_etc_passwd",
    "read_via_relative_symlink",
    "read_via_absolute_symlink",
    "write_via_symlink_into_ro",
    "write_via_relative_symlink_into_ro",
    "opendir_parent",
}


@pytest.fixture(scope="session")
def hostile_module() -> Path:
    return build_guest("hostile_fs")


@pytest.fixture
def preopens(tmp_path: Path) -> Path:
    (tmp_path / "ro/dir").mkdir(parents=True)
    (tmp_path / "ro/file").write_text("read-only data")
    (tmp_path / "ro/dir/inner").write_text("inner")
    (tmp_path / "rw").mkdir()
    (tmp_path / "rw/x").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside/secret.txt").write_text(SECRET)
    return tmp_path


def run_guest(module_path: Path, root: Path, *, ro_writable: bool = False) -> dict[str, str]:
    stdout = root / "stdout.txt"
    code = GuestRunner(module_path).run(
        ["hostile_fs", str(root / "outside/secret.txt")],
        [(root / "ro", "/ro", ro_writable), (root / "rw", "/rw", True)],
        stdout,
    )
    assert code == 0
    lines = stdout.read_text().splitlines()
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines}


class TestHostileGuest:
    def test_every_attack_fails_and_nothing_changes(
        self, hostile_module: Path, preopens: Path
    ) -> None:
        ro_before = snapshot(preopens / "ro")
        outside_before = snapshot(preopens / "outside")
        report = run_guest(hostile_module, preopens)
        assert report.pop("control_rw_create") == "ok"
        assert report.pop("control_ro_read") == "ok"
        assert set(report) == EXPECTED_ATTEMPTS
        allowed = sorted(name for name, outcome in report.items() if outcome == "ALLOWED")
        assert allowed == []
        assert snapshot(preopens / "ro") == ro_before
        assert snapshot(preopens / "outside") == outside_before
        assert (preopens / "rw/control").read_text() == "ok"
        assert not (preopens / "rw/hard").exists()
        assert not (preopens / "rw/stolen").exists()
        assert SECRET not in (preopens / "stdout.txt").read_text()

    def test_it_is_the_mode_that_protects(self, hostile_module: Path, preopens: Path) -> None:
        """Control: with ``/ro`` writable the same guest does change it (the test can fail)."""
        report = run_guest(hostile_module, preopens, ro_writable=True)
        assert report["open_trunc"] == "ALLOWED"
        assert report["mkdir"] == "ALLOWED"
        assert (preopens / "ro/newdir").is_dir()
        # the walls that do not depend on the mode still hold
        assert report["read_dotdot_ro"].startswith("denied")
        assert report["read_via_absolute_symlink"].startswith("denied")


class TestHostileGuestInTheRunner:
    def test_policy_mounts_in_the_runner_hold(self, hostile_module: Path, preopens: Path) -> None:
        """The same attacks under the tool runner, its preopens built from a MountPolicy."""
        (preopens / "toolcage.toml").write_text(
            '[[mounts.areas]]\nhost = "ro"\nguest = "/ro"\ntiers = { side_effecting = "ro" }\n'
            '[[mounts.areas]]\nhost = "rw"\nguest = "/rw"\ntiers = { side_effecting = "rw" }\n'
        )
        policy = MountPolicy.from_config(load_config(preopens / "toolcage.toml"))
        mounts = policy.mounts_for("hostile_fs", "side_effecting", Principal())
        assert [(m.guest, m.writable) for m in mounts] == [("/ro", False), ("/rw", True)]
        ro_before = snapshot(preopens / "ro")
        outside_before = snapshot(preopens / "outside")
        with WasmEngine() as engine:
            runner = WasmToolRunner(engine)
            module = wasmtime.Module.from_file(engine.engine, str(hostile_module))
            runner.prepare("hostile_fs", module=module)
            secret_path = str(preopens / "outside/secret.txt").encode()
            result = runner.run_sync("hostile_fs", secret_path, mounts, GuestLimits(timeout=10))
        lines = result.output_text.splitlines()
        report = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in lines}
        assert report.pop("control_rw_create") == "ok"
        assert report.pop("control_ro_read") == "ok"
        assert set(report) == EXPECTED_ATTEMPTS
        assert sorted(name for name, outcome in report.items() if outcome == "ALLOWED") == []
        assert snapshot(preopens / "ro") == ro_before
        assert snapshot(preopens / "outside") == outside_before
        assert SECRET not in result.output_text
