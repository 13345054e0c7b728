"""Compile the guest tools to WASI preview-1 command modules with the pinned zig.

``python -m toolcage.wasm_tools.build`` (``make wasm``) compiles every ``tools/NAME.c``,
together with the guest SDK in ``sdk/``, into ``modules/NAME.wasm``, and the guests that
serve many tools (:data:`SHARED`: ``relay/relay.c``) likewise. A tool split into
several files keeps the others in ``tools/NAME/``; a tool that links a library of
``vendor/`` names it in :data:`VENDORED`. A module is rebuilt only when it is older than
any of its inputs, so reruns cost nothing; stale modules compile in parallel, one zig
process per CPU. zig caches each compiled C file by its content, so a rebuild compiles only
the files that changed.

Most of a first build is zig compiling wasi-libc. zig caches that work, but its cache
entries name the files of zig's own library by path, and the library sits inside each
virtualenv, so every new checkout paid for wasi-libc again. Here zig gets a cache and a
library directory of its own per user and zig version
(``$XDG_CACHE_HOME/toolcage/zig-VERSION/``, the library hard-linked from the installed
``ziglang``), so wasi-libc is compiled once per machine and user.

``python_exec.wasm``, CPython as a WebAssembly component, is built beside them by
:mod:`._python_build`. The modules ship as package data; an installed toolcage reads them
with :mod:`importlib.resources` and never compiles anything. :func:`build_cached` compiles
other guests (the test suite's) into a per-user cache keyed by their content, and
:func:`build_tool` (``--tool NAME.c [--out DIR]``) an operator's own guest with the SDK;
:mod:`._python_tool_build` (``--python-tool NAME.py``) an operator's tool written in Python,
:mod:`._js_tool_build` (``--js-tool NAME.js``) one written in JavaScript.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "tools"
SDK = HERE / "sdk"
MODULES = HERE / "modules"
VENDOR = HERE / "vendor"
SHARED = {"relay": HERE / "relay" / "relay.c"}
"""Guests that serve every tool whose declaration names them (``"relay": ...``), by module
name: they live outside ``tools/``, which holds one declaration beside each C file."""

ZIG_TARGET = "wasm32-wasi"
"""zig 0.17 still spells WASI preview 1 ``wasm32-wasi`` (``wasm32-wasip1`` is clang's name)."""

CFLAGS = (
    f"--target={ZIG_TARGET}",
    "-std=c11",
    "-D_DEFAULT_SOURCE",  # memmem, strdup and friends of wasi-libc (musl)
    "-O2",
    "-s",
    # zig's default 16 MiB shadow stack would be most of a guest's memory limit.
    "-Wl,-z,stack-size=1048576",
    "-Wall",
    "-Werror",
)
"""What every guest is compiled with, besides its include directories."""


@dataclass(frozen=True)
class Library:
    """A C library vendored under ``vendor/NAME/``: its sources and headers in ``source/``."""

    name: str
    """The directory under ``vendor/``."""
    defines: tuple[str, ...] = ()
    """Preprocessor definitions (``NAME`` or ``NAME=VALUE``) the library and the tools that
    link it are compiled with."""

    @property
    def source(self) -> Path:
        """The include directory, which also holds the sources."""
        return VENDOR / self.name / "source"

    def sources(self) -> list[Path]:
        """The library's C files."""
        return sorted(self.source.rglob("*.c"))

    def inputs(self) -> list[Path]:
        """Every file and directory a module that links the library depends on (a
        directory's time changes when a file is added or removed)."""
        return sorted([self.source, *self.source.rglob("*")])

    def directories(self) -> tuple[Path, ...]:
        """The library's directories, listed once per process. Their times change when a
        file is added, removed or replaced, as updating the vendored copy does: a cheap
        stand-in for :meth:`inputs`, which a file edited in place also changes."""
        return _directories(self.source)


@functools.cache
def _directories(root: Path) -> tuple[Path, ...]:
    return tuple(Path(path) for path, _, _ in os.walk(root))


LEXBOR = Library("lexbor", defines=("LEXBOR_STATIC",))
"""lexbor, the WHATWG HTML5 parser (its core, dom, html, ns and tag modules)."""

VENDORED: dict[str, tuple[Library, ...]] = {"web_fetch": (LEXBOR,)}
"""The vendored libraries each tool links, by tool name."""


class BuildError(RuntimeError):
    """A guest failed to compile; the message carries the compiler's output."""


def sdk_sources() -> list[Path]:
    """The SDK's C files, linked into every tool (the linker drops what a tool does not use)."""
    return sorted(SDK.glob("*.c"))


def sdk_inputs() -> list[Path]:
    """Every SDK file a module depends on (sources and headers), the SDK's directory (a file
    added or removed changes it) and this build script (the compiler's flags)."""
    return [*sorted([*SDK.glob("*.c"), *SDK.glob("*.h")]), SDK, Path(__file__)]


def is_stale(out: Path, inputs: Iterable[Path]) -> bool:
    """Whether ``out`` is missing or older than any of ``inputs``."""
    if not out.is_file():
        return True
    built = out.stat().st_mtime_ns
    return any(path.stat().st_mtime_ns > built for path in inputs)


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/toolcage``, else ``~/.cache/toolcage``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolcage"


def zig_version() -> str:
    """The version of the installed ``ziglang`` package."""
    try:
        return version("ziglang")
    except PackageNotFoundError as exc:
        raise BuildError("the ziglang package is not installed (pip install ziglang)") from exc


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _stable_zig_lib(home: Path) -> Path | None:
    """zig's library under ``home``, linked from the installed package on first use.

    The directory appears by one rename, so a concurrent build sees all of it or none.
    None when the package's library cannot be found.
    """
    lib = home / "lib"
    if lib.is_dir():
        return lib
    spec = importlib.util.find_spec("ziglang")  # finding it does not run zig
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations))) / "lib"
    if not source.is_dir():
        return None
    staging = Path(tempfile.mkdtemp(dir=home, prefix=".lib-"))
    try:
        shutil.copytree(source, staging / "lib", copy_function=_link_or_copy)
        with contextlib.suppress(OSError):  # a concurrent build put it there first
            (staging / "lib").rename(lib)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return lib if lib.is_dir() else None


def zig_environment() -> dict[str, str]:
    """The environment zig runs in: a cache and library per user and zig version.

    A home directory that cannot be written leaves zig its own defaults.
    """
    env = dict(os.environ)
    home = cache_root() / f"zig-{zig_version()}"
    try:
        (home / "cache").mkdir(parents=True, exist_ok=True)
        lib = _stable_zig_lib(home)
    except OSError:
        return env
    env["ZIG_GLOBAL_CACHE_DIR"] = env["ZIG_LOCAL_CACHE_DIR"] = str(home / "cache")
    if lib is not None:
        env["ZIG_LIB_DIR"] = str(lib)
    return env


def compile_guest(
    sources: Sequence[Path],
    out: Path,
    *,
    include: Sequence[Path] = (SDK,),
    defines: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Path:
    """Compile ``sources`` into the command module ``out`` (written whole, by one rename)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.stem}-", suffix=".wasm")
    os.close(fd)
    tmp = Path(name)
    command = [
        sys.executable,
        "-m",
        "ziglang",
        "cc",
        *CFLAGS,
        *(f"-D{define}" for define in defines),
        *(f"-I{path}" for path in include),
        *(str(path) for path in sources),
        "-o",
        str(tmp),
    ]
    try:
        done = subprocess.run(  # noqa: S603
            command,
            capture_output=True,
            text=True,
            check=False,
            env=zig_environment() if env is None else env,
        )
        if done.returncode != 0:
            raise BuildError(f"compiling {out.name} failed:\n{done.stderr}")
        tmp.chmod(0o644)  # mkstemp's 0600 would hide the module from other users
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


@dataclass(frozen=True)
class Job:
    """One module to compile."""

    sources: Sequence[Path]
    """The C files, compiled and linked together."""
    out: Path
    """The module written."""
    include: Sequence[Path] = (SDK,)
    """Include directories."""
    defines: Sequence[str] = ()
    """Preprocessor definitions (``NAME`` or ``NAME=VALUE``)."""


def tool_inputs(source: Path, *, whole_libraries: bool = True) -> list[Path]:
    """What the module of tool ``source`` depends on: its source, ``tools/NAME/`` beside it
    (the directory and its files), the SDK and the libraries it links -- every file of each
    (:meth:`Library.inputs`), or with ``whole_libraries=False`` their directories only
    (:meth:`Library.directories`), the check a running toolcage makes before it loads a
    module of a source checkout."""
    parts = source.parent / source.stem
    own = _own_files(parts)
    libraries = VENDORED.get(source.stem, ())
    return [
        source,
        *([parts, *own] if own else []),
        *sdk_inputs(),
        *(
            path
            for library in libraries
            for path in (library.inputs() if whole_libraries else library.directories())
        ),
    ]


def _own_files(parts: Path) -> list[Path]:
    """The C files and headers of a tool split into several files (none when ``parts`` is
    not a directory)."""
    return sorted(parts.glob("*.[ch]")) if parts.is_dir() else []


def tool_job(source: Path, out: Path) -> tuple[Job, list[Path]]:
    """How to compile the tool ``source`` into ``out``, and what the module depends on
    (:func:`tool_inputs`)."""
    own = _own_files(source.parent / source.stem)
    libraries = VENDORED.get(source.stem, ())
    job = Job(
        sources=[
            source,
            *(path for path in own if path.suffix == ".c"),
            *sdk_sources(),
            *(path for library in libraries for path in library.sources()),
        ],
        out=out,
        include=(SDK, source.parent, *(library.source for library in libraries)),
        defines=tuple(define for library in libraries for define in library.defines),
    )
    return job, tool_inputs(source)


def _parallel(jobs: Sequence[Job]) -> list[Path]:
    """Run compiles side by side; the first failure is raised."""
    if not jobs:
        return []
    env = zig_environment()
    workers = min(len(jobs), len(os.sched_getaffinity(0)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(compile_guest, job.sources, job.out, include=job.include,
                        defines=job.defines, env=env)
            for job in jobs
        ]  # fmt: skip
        return [future.result() for future in futures]


def source_of(module: str) -> Path:
    """The C source of built module ``module``: a shared guest's, else ``tools/NAME.c``."""
    return SHARED.get(module, TOOLS / f"{module}.c")


def build_all(*, force: bool = False, out_dir: Path = MODULES) -> list[Path]:
    """Build every stale tool module, in parallel; the modules that were (re)built."""
    sources = [*sorted(TOOLS.glob("*.c")), *SHARED.values()]
    jobs = [tool_job(source, out_dir / f"{source.stem}.wasm") for source in sources]
    ordered = sorted(jobs, key=_slowest_first)
    return _parallel([job for job, inputs in ordered if force or is_stale(job.out, inputs)])


def _slowest_first(entry: tuple[Job, list[Path]]) -> int:
    """Modules with the most sources start first, so the others fill the remaining CPUs."""
    return -len(entry[0].sources)


def cached_module_path(sources: Sequence[Path], *, include: Sequence[Path] = ()) -> Path:
    """Where :func:`build_cached` keeps the module of ``sources``: named by their content."""
    digest = hashlib.sha256()
    headers = sorted(header for path in include for header in path.glob("*.h"))
    for part in (zig_version(), *CFLAGS):
        digest.update(part.encode() + b"\0")
    for path in [*sources, *headers]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    stem = sources[0].stem if sources else "guest"
    return cache_root() / "guests" / f"{stem}-{digest.hexdigest()[:24]}.wasm"


def build_cached(*groups: Sequence[Path], include: Sequence[Path] = ()) -> list[Path]:
    """Modules of each group of ``sources``, compiled (in parallel) only when not cached yet."""
    paths = [cached_module_path(sources, include=include) for sources in groups]
    _parallel(
        [
            Job(sources, path, include)
            for sources, path in zip(groups, paths, strict=True)
            if not path.is_file()
        ]
    )
    return paths


def build_tool(source: Path, out_dir: Path | None = None) -> Path:
    """Compile an operator's guest ``NAME.c`` with the SDK into ``OUT_DIR/NAME.wasm``
    (beside the source by default), where ``[guest_tools] dirs`` finds it."""
    target = (source.parent if out_dir is None else out_dir) / f"{source.stem}.wasm"
    return compile_guest([source, *sdk_sources()], target)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m toolcage.wasm_tools.build [--force]`` (the C guests and
    ``python_exec.wasm``, see :mod:`._python_build`),
    ``python -m toolcage.wasm_tools.build --tool NAME.c [--out DIR]`` for one operator tool, or
    ``... --python-exec --packages SPEC [SPEC ...] --out FILE`` for a python_exec component
    that bundles an operator's pure-Python packages, or ``... --python-tool NAME.py [--out
    DIR]`` for an operator's tool written in Python (see :mod:`._python_tool_build`), or
    ``... --js-tool NAME.js [--out DIR]`` in JavaScript (see :mod:`._js_tool_build`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--tool" in args:
        return _main_tool(args)
    if "--js-tool" in args:
        from . import _js_tool_build

        return _js_tool_build.main(args)
    from . import _python_build as python  # here: build_backend loads build.py alone

    if "--python-exec" in args:
        return python.main(args)
    if "--python-tool" in args:
        from . import _python_tool_build

        return _python_tool_build.main(args)
    from . import _runner_build

    try:
        built = build_all(force="--force" in args)
        runner = _runner_build.build_runner(force="--force" in args)
        if runner is not None:
            built.append(runner)
        if python.build_default(force="--force" in args):
            built.append(python.COMPONENT)
    except (BuildError, python.PythonBuildError) as exc:
        print(exc, file=sys.stderr)
        return 1
    for path in built:
        print(f"built {path.relative_to(HERE.parent)}")
    if not built:
        print("wasm modules are up to date")
    return 0


def _main_tool(args: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolcage.wasm_tools.build")
    parser.add_argument("--tool", type=Path, required=True, help="the guest's C source")
    parser.add_argument("--out", type=Path, help="directory of the module (the source's)")
    options = parser.parse_args(args)
    try:
        built = build_tool(options.tool, options.out)
    except BuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"built {built}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
