"""Real MCP servers from PyPI and npm, installed once into a cache that later runs reuse.

The cache is ``$XDG_CACHE_HOME/toolcage/mcp-servers`` (``~/.cache/...``) when the servers'
uid can read it; a root runtime runs them as nobody, who cannot enter ``/root`` (mode 0700),
so under root it is ``/var/tmp/toolcage-mcp-servers`` instead -- the advice the README gives
operators. Each install happens under a lock, in its final place (a venv does not move: its
scripts name their interpreter by path), and counts only once its ``.complete`` file is
written. A venv is made from a Python in ``/usr`` (visible in every sandbox), so only the
venv itself needs granting. When a registry cannot be reached the test is skipped, saying so.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from . import reachable

INSTALL_SECONDS = 600
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/usr/local/bin")
NODE = shutil.which("node", path="/usr/bin:/usr/local/bin")
NPM = shutil.which("npm", path="/usr/bin:/usr/local/bin")


def cache_root() -> Path:
    """Where the servers are installed (see the module docstring); made if missing."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    root = base / "toolcage" / "mcp-servers"
    if os.geteuid() == 0 and not reachable(base if base.exists() else base.parent):
        root = Path("/var/tmp/toolcage-mcp-servers")
    root.mkdir(parents=True, exist_ok=True, mode=0o755)
    info = root.lstat()
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        pytest.skip(f"{root} is not this user's own directory: not used as a cache")
    return root


@contextmanager
def _installing(name: str) -> Iterator[tuple[Path, bool]]:
    """The install directory of ``name``, and whether it is complete, under a lock."""
    root = cache_root()
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = root / name
        complete = (target / ".complete").exists()
        if not complete and target.exists():
            shutil.rmtree(target)  # a run that stopped half-way
        yield target, complete
        if target.exists() and not complete:
            (target / ".complete").touch()


def _run(command: list[str], what: str) -> None:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        pytest.skip(f"cannot install {what} (offline, or the registry refused): {last[:300]}")


def pypi_venv(package: str) -> Path:
    """A venv made from the system's Python with ``package`` installed from PyPI."""
    if SYSTEM_PYTHON is None or not reachable(SYSTEM_PYTHON):
        pytest.skip("no python3 in /usr/bin or /usr/local/bin to make a venv from")
    with _installing(f"pypi-{_slug(package)}") as (venv, complete):
        if not complete:
            _run([SYSTEM_PYTHON, "-m", "venv", str(venv)], f"a venv for {package}")
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
            _run([*pip, "--disable-pip-version-check", package], f"{package} from PyPI")
    return venv


def npm_prefix(package: str) -> Path:
    """A directory with ``package`` installed from npm (``npm install --prefix``)."""
    if NODE is None or NPM is None:
        pytest.skip("node and npm are not installed (apt-get install nodejs npm)")
    with _installing(f"npm-{_slug(package)}") as (prefix, complete):
        if not complete:
            prefix.mkdir()
            flags = ["--no-audit", "--no-fund", "--loglevel=error", "--prefix", str(prefix)]
            _run([NPM, "install", *flags, package], f"{package} from npm")
    return prefix


def _slug(package: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", package.lower()).strip("-")
