"""The files a sandbox sees in place of the host's: written once, bound into every sandbox.

A sandbox's ``/etc`` is one read-only bind of a directory holding copies of the few host
files commands need (loader cache, time zone, lookup tables) beside a synthetic
``passwd`` and ``group``; the git guard is a file beside it. Writing them once when the
sidecar starts, instead of binding each host file and piping each synthetic one into every
bubblewrap, saves one mount per file per command -- bubblewrap rereads the whole mount
table after each bind. The copies are taken when the sidecar starts: a change to the host
files reaches commands when the sidecar restarts.

The directory is readable by everyone (bubblewrap runs as the sandbox uid) and writable only
by its creator; a sandbox sees it read-only. :meth:`Staging.close` removes it, and so does
the interpreter's exit. A sidecar killed outright cannot, so each directory holds a lock
(``flock`` on a file in it) for as long as its sidecar lives -- the kernel drops it when
the process dies, however it dies -- and staging a new directory first removes the
unlocked ones of the same user.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Iterable
from pathlib import Path

PREFIX = "toolcage-sandbox-"
_LOCK = ".in-use"


class Staging:
    """A private copy of ``/etc`` entries and extra files, removed by :meth:`close`."""

    def __init__(
        self,
        etc_names: Iterable[str],
        etc_files: dict[str, bytes],
        files: dict[str, tuple[bytes, int]],
        *,
        mount_points: Iterable[str] = (),
        host_etc: Path = Path("/etc"),
        parent: Path | None = None,
    ) -> None:
        """Copy ``etc_names`` from ``host_etc`` (those that exist) and write ``etc_files``
        into ``etc/``, ``files`` (content, mode) beside it; ``mount_points`` are empty
        entries of the same kind as the host's, for binds of live host files over them."""
        parent = Path(tempfile.gettempdir()) if parent is None else parent
        remove_stale(parent)
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        lock = _hold_lock(self.path)
        self._finalizer = weakref.finalize(self, _remove, self.path, lock)
        try:
            self.etc = self.path / "etc"
            self.etc.mkdir()
            for name in etc_names:
                _copy(host_etc / name, self.etc / name)
            for name in mount_points:
                _mount_point(host_etc / name, self.etc / name)
            for name, content in etc_files.items():
                _write(self.etc / name, content, 0o444)
            for name, (content, mode) in files.items():
                _write(self.path / name, content, mode)
            for directory in (self.path, *(p for p in self.path.rglob("*") if _is_dir(p))):
                os.chmod(directory, 0o755)  # noqa: S103 - bwrap reads it as the sandbox uid
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._finalizer()


def remove_stale(parent: Path) -> None:
    """Remove the staged directories in ``parent`` that are ours and no process holds."""
    for entry in os.scandir(parent):
        if not entry.name.startswith(PREFIX):
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            fd = os.open(Path(entry.path) / _LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while its sidecar lives
            except BlockingIOError:
                continue
            finally:
                os.close(fd)
            shutil.rmtree(entry.path, ignore_errors=True)


def _hold_lock(directory: Path) -> int:
    """Lock a new file and only then give it its name: no one sees it unlocked."""
    fresh = directory / f"{_LOCK}.new"
    fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(fresh, directory / _LOCK)
    return fd


def _remove(directory: Path, lock: int) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    os.close(lock)


def _is_dir(path: Path) -> bool:
    return stat.S_ISDIR(os.lstat(path).st_mode)


def _copy(source: Path, dest: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if source.is_dir():
            shutil.copytree(source, dest, symlinks=True)
        else:
            dest.write_bytes(source.read_bytes())
            os.chmod(dest, 0o444)


def _mount_point(source: Path, dest: Path) -> None:
    if source.is_dir():
        dest.mkdir(exist_ok=True)
    elif source.exists():
        _write(dest, b"", 0o444)


def _write(path: Path, content: bytes, mode: int) -> None:
    path.write_bytes(content)
    os.chmod(path, mode)
