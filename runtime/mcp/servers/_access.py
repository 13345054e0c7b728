"""Whether a uid may use a host path, judged from modes and owners the way the kernel
judges them (ACLs and capabilities aside): for explaining, before or after the fact, why a
sandboxed process cannot reach what it was given."""

from __future__ import annotations

import stat
from pathlib import Path


def allows(path: Path, uid: int, gid: int, bits: int) -> bool:
    """Whether ``uid``/``gid`` (its only group) has ``bits``, given as the "other" bits,
    on ``path``; root has every bit."""
    if uid == 0:
        return True
    info = path.stat()
    if info.st_uid == uid:
        granted = info.st_mode >> 6
    elif info.st_gid == gid:
        granted = info.st_mode >> 3
    else:
        granted = info.st_mode
    return granted & bits == bits


def unsearchable_parent(path: Path, uid: int, gid: int, *, itself: bool = False) -> Path | None:
    """The first directory above ``path`` (and ``path`` itself, when ``itself``), from the
    root down, that ``uid``/``gid`` cannot search, or ``None``."""
    on_the_way: list[Path] = [*reversed(path.parents)]
    if itself:
        on_the_way.append(path)
    for directory in on_the_way:
        if not allows(directory, uid, gid, stat.S_IXOTH):
            return directory
    return None
