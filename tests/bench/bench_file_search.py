"""``file_search`` against ``grep -rF``.

The tool scans a generated tree of 20,000 files / 100 MB (made once, under the user cache
directory) through ``Runtime.execute``, beside ``grep -rF`` on the same tree, in turns; best of
five each, with the page cache warm.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from pathlib import Path

import anyio
from toolcage.runtime import Runtime
from toolcage.runtime.wasm import default_cache_dir

from .stats import ms

TREE_DIRS, TREE_FILES, FILE_BYTES = 200, 100, 5 * 1024
NEEDLE = "zebra-quokka-42"
ROUNDS = 5
TARGET = 1.5

CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
"""


def _tree() -> Path:
    """20,000 files of 5 KiB of text (100 MB) in 200 folders; 40 of them hold the needle."""
    root = default_cache_dir().parent / "bench-tree-v1"
    done = root / ".complete"
    if done.exists():
        return root
    rng = random.Random(7)  # noqa: S311 - a reproducible tree, not a secret
    words = [f"w{n:04d}" for n in range(3000)]
    for d in range(TREE_DIRS):
        folder = root / "ws" / f"d{d:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(TREE_FILES):
            lines, size = [], 0
            while size < FILE_BYTES:
                line = " ".join(rng.choices(words, k=12))
                lines.append(line)
                size += len(line) + 1
            if (d * TREE_FILES + f) % 500 == 0:
                lines[len(lines) // 2] += " " + NEEDLE
            (folder / f"f{f:03d}.txt").write_text("\n".join(lines)[:FILE_BYTES] + "\n")
    (root / "toolcage.toml").write_text(CONFIG)
    done.touch()
    return root


async def _side_by_side(root: Path) -> tuple[float, float, int]:
    """The best of ROUNDS file_search calls and ROUNDS grep runs, taken in turns so that
    the load of a shared machine falls on both alike; and file_search's hits."""
    args = {"path": "/workspace", "query": NEEDLE, "max_results": 5000}
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        await runtime.execute("file_search", args)  # warm the page cache and the module
        _grep(root)
        searches, greps = [], []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            result = await runtime.execute("file_search", args)
            searches.append(time.perf_counter() - started)
            assert not result.is_error, result.output_text
            greps.append(await anyio.to_thread.run_sync(_grep, root))
        hits = len([line for line in result.output_text.splitlines() if NEEDLE in line])
    return min(searches), min(greps), hits


def _grep(root: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["grep", "-rF", NEEDLE, str(root / "ws")], capture_output=True, check=True)
    return time.perf_counter() - started


def run() -> list[str]:
    root = _tree()
    wasm, grep, hits = anyio.run(_side_by_side, root)
    files, ratio = TREE_DIRS * TREE_FILES, wasm / grep
    verdict = "met" if ratio <= TARGET else "not met"
    return [
        f"file_search over {files:,} files / {files * FILE_BYTES / 1e6:.0f} MB ({hits} hits): "
        f"{ms(wasm)} vs grep -rF {ms(grep)} = {ratio:.2f}x (target: <= {TARGET}x) {verdict}",
    ]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "default")
    print("\n".join(run()))
