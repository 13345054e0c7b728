"""The hostile tree: mounts, a sentinel outside them, and traps planted inside.

::

    root/
      outside/secret.txt    the sentinel (no mount reaches it)
      ws/                   /workspace, read-write
        sub/deeper/         ordinary directories
        escape -> ../outside              relative link out
        escape_abs -> root/outside        absolute link out
        chain1 -> sub/chain2, sub/chain2 -> ../chain3, chain3 -> ../outside
        loop_a <-> loop_b                 a symlink loop
        self_loop -> .                    a directory loop
        dir_escape -> root/outside/       absolute, with a trailing slash
        docs_link -> root/docs            absolute link into the read-only mount
        hard_secret                       a hard link to the sentinel
        pipe                              a FIFO
      docs/readme           /docs, read-only
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolcage.policies import MountPolicy, ToolcageConfig, load_config

SECRET = "SENTINEL-7f3a9c-do-not-leak"  # noqa: S105 (a sentinel, not a password)
DOCS = "read-only documentation"


def build_tree(root: Path) -> None:
    root = root.resolve()
    (root / "outside").mkdir(parents=True)
    (root / "outside/secret.txt").write_text(SECRET)
    ws = root / "ws"
    (ws / "sub/deeper").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "docs/readme").write_text(DOCS)
    (ws / "escape").symlink_to("../outside")
    (ws / "escape_abs").symlink_to(root / "outside")
    (ws / "chain1").symlink_to("sub/chain2")
    (ws / "sub/chain2").symlink_to("../chain3")
    (ws / "chain3").symlink_to("../outside")
    (ws / "loop_a").symlink_to("loop_b")
    (ws / "loop_b").symlink_to("loop_a")
    (ws / "self_loop").symlink_to(".")
    (ws / "dir_escape").symlink_to(str(root / "outside") + "/")
    (ws / "docs_link").symlink_to(root / "docs")
    os.link(root / "outside/secret.txt", ws / "hard_secret")
    os.mkfifo(ws / "pipe")


def config_for(root: Path, *, shared: bool = False) -> ToolcageConfig:
    """The tree's mounts; with ``shared``, also ``root/shared`` at ``/shared``, read-write."""
    text = (
        '[[mounts.areas]]\nhost = "ws"\nguest = "/workspace"\n'
        'tiers = { read_only = "ro", side_effecting = "rw", privileged = "rw" }\n'
        '[[mounts.areas]]\nhost = "docs"\nguest = "/docs"\n'
        'tiers = { read_only = "ro", side_effecting = "ro", privileged = "ro" }\n'
    )
    if shared:
        (root / "shared").mkdir(exist_ok=True)
        text += (
            '[[mounts.areas]]\nhost = "shared"\nguest = "/shared"\n'
            'tiers = { side_effecting = "rw", privileged = "rw" }\n'
        )
    path = root / "toolcage.toml"
    path.write_text(text)
    return load_config(path)


def policy_for(root: Path) -> MountPolicy:
    return MountPolicy.from_config(config_for(root))


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry under ``directory`` (not following links) with a digest of its state."""
    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            info = path.lstat()
            digest = f"{info.st_mode:o}:{info.st_mtime_ns}"
            if path.is_file() and not path.is_symlink():
                digest += ":" + hashlib.sha256(path.read_bytes()).hexdigest()
            state[str(path.relative_to(directory))] = digest
    return state


@contextmanager
def flipping_symlink(root: Path) -> Iterator[Path]:
    """``ws/race``, swapped without pause between a harmless file and a symlink to the
    outside sentinel until the body ends: a check-then-use race for whatever reads it."""
    race = root / "ws/race"
    race.write_text("harmless")
    stop = threading.Event()

    def flip() -> None:
        tmp = root / "ws/race.tmp"
        while not stop.is_set():
            tmp.symlink_to(root / "outside/secret.txt")
            os.replace(tmp, race)
            tmp.write_text("harmless")
            os.replace(tmp, race)

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        yield race
    finally:
        stop.set()
        flipper.join()
