"""The path policy's cost per argument: canonicalising over a real tree, symlinks included."""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path

from toolcage.policies import GrantedMount, canonical_guest_path

from .stats import summarise, us

CALLS = 5_000


def _time(path: str, mounts: tuple[GrantedMount, ...]) -> tuple[float, float]:
    samples = []
    for _ in range(CALLS):
        start = time.perf_counter()
        with contextlib.suppress(ValueError):  # the refused case raises
            canonical_guest_path(path, mounts, "read")
        samples.append(time.perf_counter() - start)
    return summarise(samples)


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp).resolve() / "ws"
        (ws / "src/pkg/mod").mkdir(parents=True)
        (ws / "src/pkg/mod/file.py").write_text("x = 1\n")
        (ws / "link").symlink_to("src/pkg")
        mounts = (GrantedMount(ws, "/workspace", True),)
        lines = []
        for label, path in (
            ("4 components, no links", "/workspace/src/pkg/mod/file.py"),
            ("relative, through a symlink", "link/mod/file.py"),
            ("refused traversal", "../../etc/passwd"),
        ):
            median, p99 = _time(path, mounts)
            lines.append(f"path check, {label}: median {us(median)}, p99 {us(p99)}")
        return lines
