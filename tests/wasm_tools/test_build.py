"""The guest build: per-user zig cache, rebuilds of what changed, builds side by side."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path

import pytest
import wasmtime
from toolcage.wasm_tools import build
from toolcage.wasm_tools.build import (
    LEXBOR,
    SDK,
    SHARED,
    TOOLS,
    build_all,
    build_cached,
    cache_root,
    tool_job,
    zig_environment,
    zig_version,
)

TOOL_NAMES = {source.stem for source in TOOLS.glob("*.c")} | set(SHARED)


def package_zig_lib() -> Path:
    spec = find_spec("ziglang")
    assert spec is not None
    assert spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "lib"


def assert_modules(out_dir: Path) -> None:
    """``out_dir`` holds one valid, world-readable module per tool and nothing else."""
    assert {path.name for path in out_dir.iterdir()} == {f"{name}.wasm" for name in TOOL_NAMES}
    engine = wasmtime.Engine()
    for path in out_dir.iterdir():
        wasmtime.Module.validate(engine, path.read_bytes())
        assert path.stat().st_mode & 0o444 == 0o444


class TestBuildAll:
    def test_builds_every_tool_then_only_what_changed(self, tmp_path: Path) -> None:
        assert {path.stem for path in build_all(out_dir=tmp_path)} == TOOL_NAMES
        assert_modules(tmp_path)
        assert build_all(out_dir=tmp_path) == []
        os.utime(tmp_path / "file_read.wasm", ns=(0, 0))  # older than its source
        assert build_all(out_dir=tmp_path) == [tmp_path / "file_read.wasm"]

    def test_builds_of_one_tree_side_by_side_both_succeed(self, tmp_path: Path) -> None:
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = [pool.submit(build_all, force=True, out_dir=tmp_path) for _ in range(2)]
            for run in runs:
                assert {path.stem for path in run.result()} == TOOL_NAMES
        assert_modules(tmp_path)  # no temporary file left behind

    def test_a_tool_compiles_and_depends_on_its_own_files_and_its_library(self) -> None:
        job, inputs = tool_job(TOOLS / "web_fetch.c", Path("web_fetch.wasm"))
        parser = LEXBOR.source / "lexbor" / "html" / "parser"
        assert {TOOLS / "web_fetch" / "markdown.c", parser.with_suffix(".c")} <= set(job.sources)
        assert LEXBOR.source in job.include
        assert job.defines == ("LEXBOR_STATIC",)
        # headers change the module too; a directory's time, a file added or removed
        assert {TOOLS / "web_fetch" / "markdown.h", parser.with_suffix(".h")} <= set(inputs)
        assert {TOOLS / "web_fetch", parser.parent} <= set(inputs)

    def test_every_module_depends_on_the_sdk_folder_and_the_build_script(self) -> None:
        """A file added to or removed from the SDK, or a compiler flag changed, rebuilds."""
        _, inputs = tool_job(TOOLS / "file_read.c", Path("file_read.wasm"))
        assert {SDK, Path(build.__file__)} <= set(inputs)

    def test_only_the_tool_that_names_a_library_links_it(self) -> None:
        job, inputs = tool_job(TOOLS / "file_read.c", Path("file_read.wasm"))
        assert not any(LEXBOR.source in path.parents for path in [*job.sources, *inputs])

    def test_the_command_rebuilds_nothing_in_an_up_to_date_tree(self) -> None:
        command = [sys.executable, "-m", "toolcage.wasm_tools.build"]
        subprocess.run(command, capture_output=True, check=True)
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        assert done.stdout == "wasm modules are up to date\n"


class TestZigEnvironment:
    def test_zig_keeps_its_cache_and_library_per_user_and_version(self) -> None:
        env = zig_environment()
        home = cache_root() / f"zig-{zig_version()}"
        assert env["ZIG_GLOBAL_CACHE_DIR"] == env["ZIG_LOCAL_CACHE_DIR"] == str(home / "cache")
        assert env["ZIG_LIB_DIR"] == str(home / "lib")

    def test_the_library_is_the_packages_set_up_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        lib = Path(zig_environment()["ZIG_LIB_DIR"])
        assert lib == tmp_path / "toolcage" / f"zig-{zig_version()}" / "lib"
        names = sorted(path.relative_to(lib) for path in lib.rglob("*"))
        assert names == sorted(
            path.relative_to(package_zig_lib()) for path in package_zig_lib().rglob("*")
        )
        assert zig_environment()["ZIG_LIB_DIR"] == str(lib)
        assert sorted(path.name for path in lib.parent.iterdir()) == ["cache", "lib"]

    def test_a_cache_that_cannot_be_written_leaves_zig_its_defaults(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "file").write_text("not a directory")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))
        for name in ("ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR", "ZIG_LIB_DIR"):
            monkeypatch.delenv(name, raising=False)
        env = zig_environment()
        assert not {"ZIG_GLOBAL_CACHE_DIR", "ZIG_LOCAL_CACHE_DIR", "ZIG_LIB_DIR"} & env.keys()


class TestBuildCached:
    SOURCE = '#include <stdio.h>\nint main(void) { puts("%s"); return 0; }\n'

    def test_a_guest_is_compiled_once_and_found_by_its_content(self, tmp_path: Path) -> None:
        source = tmp_path / "hello.c"
        source.write_text(self.SOURCE % "hello")
        (first,) = build_cached([source])
        built = first.stat().st_mtime_ns
        assert build_cached([source]) == [first]
        assert first.stat().st_mtime_ns == built
        source.write_text(self.SOURCE % "hello again")
        (second,) = build_cached([source])
        assert second != first
        assert second.parent == first.parent == cache_root() / "guests"
