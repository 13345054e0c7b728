"""A wheel built from a clean tree carries the guest tools and runs them without zig.

The tree is copied as git knows it (no built module in it), built with ``pip wheel`` (the
build backend compiles the guests), and installed into a new virtualenv that has toolcage's
dependencies but no ziglang: the installed ``toolcage`` command then runs guest tools.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("runtime", "policies", "host_bindings", "sidecar", "wasm_tools")

# Installing the build requirements (ziglang among them) takes a while on a busy machine.
pytestmark = pytest.mark.timeout(900)


@dataclass
class Installed:
    wheel: Path
    venv: Path

    def toolcage(self, *args: str, cwd: Path) -> dict[str, object]:
        done = subprocess.run(
            [str(self.venv / "bin" / "toolcage"), *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        envelope = json.loads(done.stdout)
        assert isinstance(envelope, dict)
        return envelope


def clean_tree(target: Path) -> Path:
    """The files git tracks or would track (no build output), tests left out."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if name.startswith("tests/") or not source.is_file():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return target


LEFT_OUT = ("ziglang", "componentize", "toolcage", "__editable__")
"""The guest build tools (ziglang, componentize-py) and toolcage itself."""


def dependencies_without_zig(target: Path) -> Path:
    """This venv's installed packages, less the guest build tools (ziglang, componentize-py)
    and toolcage itself, linked into ``target``."""
    target.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if name.startswith(LEFT_OUT) or name.endswith(".pth"):
            continue
        (target / entry.name).symlink_to(entry)
    return target


def pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--quiet", *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    tree = clean_tree(work / "tree")
    assert not list(tree.glob("wasm_tools/modules/*.wasm"))
    pip("wheel", "--no-deps", "--wheel-dir", str(work / "dist"), str(tree))
    (wheel,) = (work / "dist").glob("toolcage-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip("--python", str(venv / "bin" / "python"), "install", "--no-deps", str(wheel))
    site = Path(
        subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(f"{dependencies_without_zig(work / 'deps')}\n")
    return Installed(wheel, venv)


class TestWheel:
    def test_carries_a_module_for_every_guest_tool(self, installed: Installed) -> None:
        names = set(zipfile.ZipFile(installed.wheel).namelist())
        for source in (ROOT / "wasm_tools" / "tools").glob("*.c"):
            assert f"toolcage/wasm_tools/modules/{source.stem}.wasm" in names
            assert f"toolcage/wasm_tools/tools/{source.stem}.json" in names
            # without the source beside it, an installed module is never judged stale
            assert f"toolcage/wasm_tools/tools/{source.name}" not in names
        # nor the C libraries and helper files compiled into the modules
        assert not [name for name in names if name.startswith("toolcage/wasm_tools/vendor/")]
        assert not [name for name in names if name.endswith((".c", ".h")) and "/sdk/" not in name]

    def test_carries_the_shell_session_runner(self, installed: Installed) -> None:
        names = set(zipfile.ZipFile(installed.wheel).namelist())
        assert "toolcage/sidecar/runner/toolcage-runner" in names
        assert "toolcage/sidecar/runner/runner.c" not in names

    def test_carries_the_guest_sdk_and_the_abi(self, installed: Installed) -> None:
        names = set(zipfile.ZipFile(installed.wheel).namelist())
        for path in (ROOT / "wasm_tools" / "sdk").iterdir():
            assert f"toolcage/wasm_tools/sdk/{path.name}" in names
        for name in ("toolcage.h", "toolcage.c", "toolcage_host.h", "toolcage_host.c", "README.md"):
            assert f"toolcage/wasm_tools/sdk/{name}" in names
        assert "toolcage/host_bindings/_abi.py" in names

    def test_carries_the_adversarial_corpora(self, installed: Installed) -> None:
        """``toolcage selftest`` reads them from the installed package."""
        names = set(zipfile.ZipFile(installed.wheel).namelist())
        for corpus in (ROOT / "runtime" / "selftest" / "corpora").glob("*.json"):
            assert f"toolcage/runtime/selftest/corpora/{corpus.name}" in names
        assert "toolcage/runtime/selftest/_path_corpus.py" in names

    def test_scaffolds_a_guest_tool_to_build_with_the_shipped_sdk(
        self, installed: Installed, tmp_path: Path
    ) -> None:
        done = subprocess.run(
            [str(installed.venv / "bin" / "toolcage"), "new-tool", "first_line", "--dir", "t"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        script = (tmp_path / "t" / "build_first_line.sh").read_text()
        assert "-m toolcage.wasm_tools.build --tool first_line.c" in script
        assert str(installed.venv) in script  # the installed interpreter, beside its SDK

    def test_carries_the_python_component_and_its_world(self, installed: Installed) -> None:
        names = set(zipfile.ZipFile(installed.wheel).namelist())
        assert "toolcage/wasm_tools/python/wit/exec.wit" in names
        for guest in ("app.py", "sandbox.py", "preload.py"):  # for --python-exec --packages
            assert f"toolcage/wasm_tools/python/guest/{guest}" in names
        # the world of operators' Python tools, and the app --python-tool builds around one
        assert "toolcage/wasm_tools/python/wit/tool.wit" in names
        assert "toolcage/wasm_tools/python/tool/tool_app.py" in names
        assert "toolcage/wasm_tools/js/tool_app.js" in names  # and --js-tool around a JS one
        found = subprocess.run(
            [
                str(installed.venv / "bin" / "python"),
                "-c",
                "import importlib.resources as r, sys\n"
                "wasm = r.files('toolcage.wasm_tools').joinpath('modules/python_exec.wasm')\n"
                "sys.stdout.buffer.write(wasm.read_bytes()[:8])\n"
                "import componentize_py",
            ],
            capture_output=True,
            check=False,
        )
        assert found.stdout == b"\0asm\x0d\x00\x01\x00"  # a component, not a core module
        assert b"No module named 'componentize_py'" in found.stderr

    def test_carries_every_package(self, installed: Installed) -> None:
        names = set(zipfile.ZipFile(installed.wheel).namelist())
        for folder in FOLDERS:
            for init in (ROOT / folder).rglob("__init__.py"):
                assert f"toolcage/{init.relative_to(ROOT)}" in names

    def test_runs_guest_tools_without_zig(self, installed: Installed, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "workspace" / "notes.md").write_text("notes from the workspace\n")
        no_zig = subprocess.run(
            [str(installed.venv / "bin" / "python"), "-c", "import ziglang"],
            capture_output=True,
            check=False,
        )
        assert no_zig.returncode != 0
        clock = installed.toolcage("call", "get_current_time", "{}", cwd=tmp_path)
        assert clock["status"] == "success"
        read = installed.toolcage(
            "call", "file_read", '{"path": "/workspace/notes.md"}', cwd=tmp_path
        )
        assert read["result"] == "notes from the workspace\n"
