"""Real file systems for the store's fault tests: a small tmpfs that fills up, a read-only
bind mount, and a run of ``toolcage`` as an unprivileged uid (root bypasses file modes)."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from ...runtime.mcp_servers import PYTHON

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")


def mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"mount {' '.join(args)}: {done.stderr.strip()}")


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=True)


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` (made), unmounted at the end."""
    path.mkdir(parents=True, exist_ok=True)
    mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    try:
        yield path
    finally:
        umount(path)


@contextlib.contextmanager
def read_only_view(source: Path, path: Path) -> Iterator[Path]:
    """``source`` bind-mounted read-only at ``path``: read-only even for root."""
    path.mkdir(parents=True, exist_ok=True)
    mount("--bind", str(source), str(path))
    try:
        mount("-o", "remount,ro,bind", str(path))
        yield path
    finally:
        umount(path)


def fill(directory: Path) -> Path:
    """Write a file in ``directory`` until its file system is full; the file."""
    filler = directory / "filler"
    block = b"\0" * 4096
    full = False
    with filler.open("wb", buffering=0) as out:
        while not full:
            try:
                out.write(block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                full = True
    return filler


def toolcage_as(uid: int, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``toolcage ARGS`` run as ``uid`` (its group the same number, no other groups) in
    ``cwd``, which also holds its caches; on an interpreter that uid can reach."""
    packages = sysconfig.get_paths()["purelib"]
    program = (
        "import site, sys; site.addsitedir(sys.argv.pop(1)); "
        "from toolcage.runtime.cli import main; sys.exit(main())"
    )
    return subprocess.run(
        [*PYTHON, "-c", program, packages, *args],
        user=uid,
        group=uid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": str(cwd), "XDG_CACHE_HOME": str(cwd)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
