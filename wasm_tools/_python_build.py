"""Build ``python_exec.wasm``: CPython 3.14 as a WebAssembly component, with componentize-py.

The component implements the ``toolcage:python/exec`` world (``python/wit/exec.wit``) with
the guest app of ``python/guest/``. componentize-py runs the app at build time and
snapshots the interpreter, so whatever the app imports then (the whole standard library,
see ``preload.py``) is all the code can import later.

The build is hermetic. componentize-py adds to the guest's path the ``site-packages`` of
the virtualenv named by ``VIRTUAL_ENV``, or else of the Python that runs it -- without
care, the host's own packages (pytest, IPython...) were importable at build time. Here it
runs in a temporary directory whose virtualenv holds exactly the bundled packages: the
``tzdata`` installed beside toolcage (its zones feed ``zoneinfo``), and an operator's
extra pure-Python wheels (``--python-exec --packages``), with the guest sources copied
beside it.

A build takes some 15 s, so it is done only when its inputs changed: the guest sources,
the WIT, the bundled packages and the componentize-py version, hashed into a key. Built
components are kept per user under ``$XDG_CACHE_HOME/toolcage/python/`` by that key, and
the module in the tree is a hard link to (or a copy of) its cache entry: a fresh checkout
on the same machine, or a switch back to an earlier branch, costs a link.
:func:`cached_build` is that cache, shared with operators' tool builds
(:mod:`._python_tool_build`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, version
from pathlib import Path
from typing import Literal

HERE = Path(__file__).resolve().parent
PYTHON = HERE / "python"
GUEST = PYTHON / "guest"
WIT = PYTHON / "wit"
EXEC_WIT = WIT / "exec.wit"
"""The ``toolcage:python`` package (beside it, ``tool.wit`` is another package)."""
WORLD = "exec"
APP = "app"
"""The guest module holding the world's implementation."""
COMPONENT = HERE / "modules" / "python_exec.wasm"

COMPONENTIZE_PY = "0.25.1"
"""The componentize-py release the guest is written for (pinned in the ``dev`` extra)."""

GUEST_PYTHON = "3.14"
"""The CPython that componentize-py embeds: the version bundled wheels must suit."""

KEEP = 4
"""Cached components kept per user (about 40 MB each), the most recently used."""


class ComponentBuildError(RuntimeError):
    """A component could not be built; the message says why."""


class PythonBuildError(ComponentBuildError):
    """The Python component could not be built; the message says why."""


@dataclass(frozen=True)
class Package:
    """A pure-Python package bundled into the component: a wheel, or an installed
    distribution (``tzdata``), unpacked into the build's ``site-packages``."""

    name: str
    """The distribution's name, for messages."""
    key: bytes
    """What identifies its content: the wheel's bytes' hash, or the installed RECORD."""
    wheel: Path | None = None
    """The wheel file, or None for an installed distribution."""

    def unpack(self, site: Path) -> None:
        """Put the package's files into ``site``."""
        if self.wheel is not None:
            with zipfile.ZipFile(self.wheel) as archive:
                archive.extractall(site)  # names checked by _check_pure
            return
        dist = distribution(self.name)
        for file in dist.files or ():
            if "__pycache__" in file.parts or file.suffix == ".pyc" or ".." in file.parts:
                continue  # compiled files, and scripts installed outside site-packages
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(str(dist.locate_file(file))), target)

    def top_level(self) -> list[str]:
        """The importable top-level names a wheel provides (none for an installed
        distribution: tzdata's are imported by the guest itself)."""
        if self.wheel is None:
            return []
        with zipfile.ZipFile(self.wheel) as archive:
            names = {name.split("/", 1)[0] for name in archive.namelist()}
        return sorted(
            name.removesuffix(".py")
            for name in names
            if not name.endswith((".dist-info", ".data"))
            and (name.endswith(".py") or "." not in name)
        )


def installed(name: str) -> Package:
    """The installed distribution ``name`` as a package to bundle."""
    try:
        dist = distribution(name)
    except PackageNotFoundError as exc:
        raise PythonBuildError(f"{name} is not installed (pip install -e '.[dev]')") from exc
    # the files' hashes, without the dist-info's own (which vary with how it was installed)
    record = sorted(
        line for line in (dist.read_text("RECORD") or "").splitlines() if ".dist-info/" not in line
    )
    return Package(name=name, key="\n".join([f"{name}=={dist.version}", *record]).encode())


def from_wheel(wheel: Path) -> Package:
    """A downloaded wheel as a package to bundle, refused when it is not pure Python."""
    _check_pure(wheel)
    return Package(name=wheel.name, key=hashlib.sha256(wheel.read_bytes()).digest(), wheel=wheel)


_BINARY = (".so", ".pyd", ".dylib", ".dll")


def _check_pure(wheel: Path) -> None:
    tags = wheel.stem.split("-")[-2:]
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    binary = [name for name in names if name.endswith(_BINARY) or ".so." in name]
    unsafe = [name for name in names if name.startswith("/") or ".." in Path(name).parts]
    if tags != ["none", "any"] or binary:
        raise PythonBuildError(
            f"{wheel.name} is not pure Python ({binary[0] if binary else 'a platform wheel'}):"
            " the sandbox's CPython runs pure-Python packages only, not C extensions"
        )
    if unsafe:
        raise PythonBuildError(f"{wheel.name} holds a file outside its root: {unsafe[0]!r}")


def download(specs: Sequence[str], dest: Path) -> list[Package]:
    """Fetch the wheels of ``specs`` and their dependencies with pip, pure-Python only."""
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", "--python-version", GUEST_PYTHON, "--implementation", "py",
        "--abi", "none", "--platform", "any", "--dest", str(dest), *specs,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        missing = re.findall(r"No matching distribution found for (\S+)", done.stderr)
        hint = (
            f"no pure-Python wheel for Python {GUEST_PYTHON} of: {', '.join(missing)}"
            if missing
            else " ".join(line.removeprefix("ERROR: ") for line in errors[-3:])
            or done.stderr.strip()[-500:]
        )
        raise PythonBuildError(
            f"pip could not fetch {' '.join(specs)}: {hint}"
            " (only pure-Python wheels, tagged none-any, can be bundled: the sandbox's"
            " CPython cannot load C extensions)"
        )
    return [from_wheel(wheel) for wheel in sorted(dest.glob("*.whl"))]


def componentize_py_version() -> str:
    """The installed componentize-py, which must be the pinned release."""
    try:
        found = version("componentize-py")
    except PackageNotFoundError:
        found = "none"
    if found != COMPONENTIZE_PY:
        raise PythonBuildError(
            f"componentize-py=={COMPONENTIZE_PY} is needed to build python_exec.wasm"
            f" (installed: {found}); pip install componentize-py=={COMPONENTIZE_PY}"
        )
    return found


def guest_inputs() -> list[Path]:
    """The guest sources and WIT the component is built from."""
    return sorted([*GUEST.glob("*.py"), EXEC_WIT])


def input_key(packages: Iterable[Package]) -> str:
    """The hash of everything the component is built from."""
    sources = ((str(path.relative_to(PYTHON)), path.read_bytes()) for path in guest_inputs())
    return content_key(sources, packages)


def content_key(
    files: Iterable[tuple[str, bytes]], packages: Iterable[Package], builder: str | None = None
) -> str:
    """The hash of a build's inputs: ``files`` (each a name and its bytes), the bundled
    ``packages`` and what builds them, ``builder`` (by default the componentize-py
    version)."""
    builder = builder or f"componentize-py=={componentize_py_version()}"
    digest = hashlib.sha256(f"{builder}\0".encode())
    for name, data in files:
        digest.update(f"{name}\0".encode() + data + b"\0")
    for package in sorted(packages, key=lambda package: package.name):
        digest.update(package.name.encode() + b"\0" + package.key + b"\0")
    return digest.hexdigest()[:32]


def _run_componentize(packages: Sequence[Package], out: Path, work: Path) -> None:
    app = work / "app"
    shutil.copytree(GUEST, app, ignore=shutil.ignore_patterns("__pycache__"))
    extra = sorted({name for p in packages if p.wheel is not None for name in p.top_level()})
    (app / "bundle.py").write_text(
        f'"""Bundled packages, preloaded."""\n\nPACKAGES = {tuple(extra)!r}\n'
    )
    componentize(app, APP, EXEC_WIT, WORLD, packages, out, work)


def componentize(
    app_dir: Path,
    app: str,
    wit: Path,
    world: str,
    packages: Sequence[Package],
    out: Path,
    work: Path,
) -> None:
    """Run the pinned componentize-py on module ``app`` of ``app_dir`` against ``world``
    of the WIT in ``wit`` (a file or a folder), hermetically: its only packages are
    ``packages``, unpacked into a virtualenv of its own under ``work``."""
    componentize_py_version()
    site = work / "venv" / "lib" / f"python{GUEST_PYTHON}" / "site-packages"
    site.mkdir(parents=True)
    for package in packages:
        package.unpack(site)
    # Only what the build needs: no PYTHONPATH, no other virtualenv, no pipenv lookup.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work),
        "VIRTUAL_ENV": str(work / "venv"),
    }
    command = [
        sys.executable, "-c", "import sys, componentize_py; sys.exit(componentize_py.script())",
        "-q", "-d", str(wit), "-w", world, "componentize", app, "-p", str(app_dir),
        "-o", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work, check=False)  # noqa: S603
    if done.returncode != 0 or not out.is_file():
        raise PythonBuildError(f"componentize-py failed:\n{(done.stdout + done.stderr)[-4000:]}")


def _cache_dir(kind: str) -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(base) / "toolcage" / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


def _prune(folder: Path, pattern: str, keep: int) -> None:
    """Keep the ``keep`` most recently used entries matching ``pattern``."""
    entries = sorted(folder.glob(pattern), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in entries[keep:]:
        stale.unlink(missing_ok=True)


def _place(source: Path, target: Path, *, link: bool) -> None:
    """Put ``source`` at ``target`` by one rename: a hard link when ``link`` and the file
    system allow it, else a copy (with the source's time, see :func:`is_current`)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.stem}-{os.getpid()}-{secrets.token_hex(4)}.wasm")
    try:
        linked = False
        if link:
            with contextlib.suppress(OSError):  # another file system: copy
                os.link(source, tmp)
                linked = True
        if not linked:
            shutil.copy2(source, tmp)
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)


def is_current(out: Path, cached: Path) -> bool:
    """Whether ``out`` is the cache entry ``cached``: the same file, or a copy of it."""
    if not (out.is_file() and cached.is_file()):
        return False
    if out.samefile(cached):
        return True
    a, b = out.stat(), cached.stat()
    return (a.st_size, a.st_mtime_ns) == (b.st_size, b.st_mtime_ns)


def build(
    packages: Sequence[Package], out: Path, *, force: bool = False, link: bool = True
) -> bool:
    """Build the component bundling ``packages`` into ``out`` unless it is current;
    whether it was (re)built or taken from the cache."""

    def make(built: Path, work: Path) -> None:
        _run_componentize(packages, built, work)

    entry = CacheEntry(f"python_exec-{input_key(packages)}.wasm", "python_exec-*.wasm", KEEP)
    return cached_build(entry, out, make, force=force, link=link) != "current"


Placed = Literal["current", "cached", "built"]
"""What :func:`cached_build` did: nothing, a copy of the cache entry, or a build."""


@dataclass(frozen=True)
class CacheEntry:
    """Where a build is kept in the per-user cache, and how many of its kind."""

    name: str
    """The file name: the kind and the key of the inputs."""
    kind: str
    """The glob of the entries of the same kind, pruned together."""
    keep: int
    """How many of them are kept, the most recently used."""
    folder: str = "python"
    """The folder of the per-user cache (``$XDG_CACHE_HOME/toolcage/FOLDER``) they are in."""


def cached_build(
    entry: CacheEntry,
    out: Path,
    make: Callable[[Path, Path], None],
    *,
    force: bool = False,
    link: bool = True,
) -> Placed:
    """Put the build of ``entry`` at ``out``: nothing when ``out`` is already it
    (``"current"``), a link or copy of the per-user cache entry when there is one
    (``"cached"``), else ``make(file, work)``'s build into a temporary folder ``work``,
    kept in the cache first (``"built"``). Without a writable cache (a read-only home)
    every build runs ``make``."""
    folder = _cache_dir(entry.folder)
    with tempfile.TemporaryDirectory(prefix="toolcage-python-") as tmp:
        work = Path(tmp)
        cached = (folder or work) / entry.name
        if not force and is_current(out, cached):
            return "current"
        placed: Placed = "cached"
        if force or not cached.is_file():
            placed = "built"
            built = work / "built.wasm"
            make(built, work)
            built.chmod(0o644)
            _place(built, cached, link=False)
            if folder is not None:
                _prune(folder, entry.kind, entry.keep)
        with contextlib.suppress(OSError):
            os.utime(cached)  # recently used: kept by the next prune
        _place(cached, out, link=link and folder is not None)
    return placed


def build_default(*, force: bool = False, out: Path = COMPONENT) -> bool:
    """``modules/python_exec.wasm``: the standard library and tzdata."""
    return build([installed("tzdata")], out, force=force)


def build_with_packages(specs: Sequence[str], out: Path) -> Path:
    """A component that also bundles the pure-Python packages ``specs`` (pip requirement
    specifiers, with their dependencies), written to ``out`` as a file of its own."""
    with tempfile.TemporaryDirectory(prefix="toolcage-wheels-") as tmp:
        wheels = download(specs, Path(tmp)) if specs else []
        names = {package.name.split("-")[0].lower() for package in wheels}
        bundled = [*([] if "tzdata" in names else [installed("tzdata")]), *wheels]
        build(bundled, out, link=False)
    return out


def main(args: Sequence[str]) -> int:
    """Command line: ``... --python-exec --packages SPEC [SPEC ...] --out FILE``."""
    parser = argparse.ArgumentParser(prog="python -m toolcage.wasm_tools.build --python-exec")
    parser.add_argument("--python-exec", action="store_true", required=True)
    parser.add_argument(
        "--packages",
        nargs="+",
        default=[],
        metavar="SPEC",
        help="pip requirement specifiers of pure-Python packages to bundle",
    )
    parser.add_argument("--out", type=Path, required=True, help="the component written")
    options = parser.parse_args(args)
    try:
        built = build_with_packages(options.packages, options.out)
    except PythonBuildError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"built {built}")
    return 0
