"""The python_exec build: rebuilt only when its inputs change, cached per user, hermetic,
and an operator's pure-Python packages bundled (C extensions refused by name)."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from toolcage.runtime import Runtime, ToolExecutionContext
from toolcage.wasm_tools import _python_build
from toolcage.wasm_tools._python_build import (
    COMPONENT,
    Package,
    build_default,
    input_key,
    installed,
)

# A build runs componentize-py (some 15 s) and the first run of a component compiles it.
pytestmark = pytest.mark.timeout(600)


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_wheel(folder: Path, name: str, files: dict[str, str], tag: str = "py3-none-any") -> Path:
    """A minimal wheel of ``files``, as pip would download it."""
    info = f"{name}-1.0.dist-info"
    wheel_file = f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
    files = {
        **files,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": wheel_file,
    }
    record = "".join(f"{path},{_hash(text)},{len(text.encode())}\n" for path, text in files.items())
    files[f"{info}/RECORD"] = f"{record}{info}/RECORD,,\n"
    wheel = folder / f"{name}-1.0-{tag}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def build_command(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The build's command line, with a cache of its own (the user's keeps the tree's)."""
    return subprocess.run(
        [sys.executable, "-m", "toolcage.wasm_tools.build", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "XDG_CACHE_HOME": str(cwd / "cache")},
        check=False,
    )


class TestRebuilds:
    def test_a_build_with_unchanged_inputs_does_nothing(self) -> None:
        build_default()
        before = COMPONENT.stat().st_mtime_ns
        assert build_default() is False
        assert COMPONENT.stat().st_mtime_ns == before

    def test_another_checkout_takes_the_component_from_the_user_cache(self, tmp_path: Path) -> None:
        build_default()
        other = tmp_path / "modules" / "python_exec.wasm"
        assert build_default(out=other) is True  # placed, not built: a link to the cache entry
        assert other.read_bytes() == COMPONENT.read_bytes()
        assert build_default(out=other) is False
        assert other.stat().st_mode & 0o444 == 0o444

    def test_every_input_is_in_the_key(self, tmp_path: Path) -> None:
        tzdata = installed("tzdata")
        wheel = make_wheel(tmp_path, "extra", {"extra.py": ""})
        keys = {
            input_key([tzdata]),
            input_key([]),
            input_key([tzdata, _python_build.from_wheel(wheel)]),
            input_key([Package(name="tzdata", key=tzdata.key + b"changed")]),
        }
        assert len(keys) == 4

    def test_its_world_is_exec_wit_alone(self) -> None:
        # tool.wit, another package beside it, is neither parsed nor hashed for python_exec
        names = [path.name for path in _python_build.guest_inputs()]
        assert "exec.wit" in names
        assert "tool.wit" not in names

    def test_another_componentize_py_is_refused_by_name(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(_python_build, "COMPONENTIZE_PY", "0.0.1")
        with pytest.raises(_python_build.PythonBuildError, match=r"componentize-py==0\.0\.1"):
            input_key([])


class TestOperatorPackages:
    @pytest.mark.anyio
    async def test_a_pure_python_package_is_importable_in_the_sandbox(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        wheel = make_wheel(
            tmp_path, "greeting", {"greeting/__init__.py": "def hello(n):\n    return f'hi {n}'\n"}
        )
        out = tmp_path / "custom.wasm"
        done = build_command("--python-exec", "--packages", wheel, "--out", out, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        # The runtime compiles it on its first call (seconds): into a cache of this test's.
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        config = tmp_path / "toolcage.toml"
        config.write_text('[tools.python_exec]\ncomponent = "custom.wasm"\ntimeout = 600\n')
        code = "import greeting, zoneinfo\nprint(zoneinfo.ZoneInfo('UTC'))\ngreeting.hello('there')"
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute(
                "python_exec", {"code": code}, ToolExecutionContext(user_id="ada")
            )
        assert not result.is_error, result.output_text
        assert result.output_text == "UTC\n'hi there'"

    @pytest.mark.parametrize(
        ("files", "tag", "named"),
        [
            ({"fast/__init__.py": "", "fast/_speed.cpython-314-wasm32-wasi.so": "\0"},
             "py3-none-any", "fast/_speed.cpython-314-wasm32-wasi.so"),
            ({"fast.py": ""}, "cp314-cp314-manylinux_2_17_x86_64", "fast-1.0-cp314"),
        ],
        ids=["extension-inside", "platform-wheel"],
    )  # fmt: skip
    def test_a_package_with_c_extensions_is_refused_by_name(
        self, tmp_path: Path, files: dict[str, str], tag: str, named: str
    ) -> None:
        wheel = make_wheel(tmp_path, "fast", files, tag)
        out = tmp_path / "custom.wasm"
        done = build_command("--python-exec", "--packages", wheel, "--out", out, cwd=tmp_path)
        assert done.returncode == 1
        assert named in done.stderr
        assert "pure-Python" in done.stderr
        assert "Traceback" not in done.stderr
        assert not out.exists()
