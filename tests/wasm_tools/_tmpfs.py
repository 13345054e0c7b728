"""Small real file systems for tests: a tmpfs of a given size, mounted and unmounted here."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True)


@contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A fresh tmpfs of ``size`` (``mount`` syntax: ``1m``) at ``where``, until the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where))
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True, capture_output=True)


def remount_read_only(where: Path) -> None:
    """Make the tmpfs at ``where`` read-only, keeping what it holds."""
    _mount("-o", "remount,ro", str(where))
