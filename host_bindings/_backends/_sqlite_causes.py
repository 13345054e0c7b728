"""Why an embedded store failed, in words an operator can act on: the one place SQLite's
and the filesystem's errors become :class:`~._errors.StoreError`.

SQLite reports a full disk as "database or disk is full" only when a write of the
database or its log fails; when its shared-memory index (``-shm``) cannot be grown it says
"disk I/O error", and a directory it cannot create its log in gives "unable to open
database file". So the cause is read from the filesystem as well as from the error: free
space, a read-only mount, the modes of the directory and the file. Each cause comes with
its fix:

=================  ==========================================================
cause              fix
=================  ==========================================================
full               free space on that file system (reads go on meanwhile)
read-only          remount it read-write, or give the directory or file to
                   the uid the runtime runs as (SQLite writes ``-wal`` and
                   ``-shm`` files beside the database)
damaged            restore from a backup, or ``sqlite3 FILE .recover``
busy               another process holds the write lock (see :mod:`._waits`)
=================  ==========================================================
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import apsw

from . import _waits as waits
from ._errors import StoreError, StoreTimeout, StoreUnavailable

LOW_SPACE = 1 << 20
"""Free bytes under which an I/O error is put down to a full file system."""

Kind = Literal["full", "read-only", "damaged", "busy", "other"]


@dataclass(frozen=True, slots=True)
class Cause:
    """Why the store at a path failed."""

    kind: Kind
    reason: str
    """What happened, naming the path (and SQLite's own words)."""
    fix: str = ""
    """What the operator can do about it."""


def diagnose(exc: BaseException, path: Path) -> Cause:
    """The cause of ``exc``, raised opening or using the database at ``path``."""
    said = str(exc) or type(exc).__name__
    code = exc.errno if isinstance(exc, OSError) else None
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return Cause(
            "damaged",
            f"{path} is damaged ({said})",
            recovery(path),
        )
    if isinstance(exc, apsw.BusyError):
        return Cause("busy", f"another process holds its write lock ({said})")
    directory = path.parent
    if isinstance(exc, apsw.FullError) or code in (errno.ENOSPC, errno.EDQUOT):
        return _full(directory, said)
    if isinstance(exc, (apsw.ReadOnlyError, apsw.CantOpenError, apsw.IOError, OSError)):
        if _read_only_mount(directory) or code == errno.EROFS:
            return Cause(
                "read-only",
                f"{directory} is on a read-only file system ({said})",
                "remount it read-write, or point [state] url at a writable place",
            )
        if isinstance(exc, apsw.IOError) and _free_bytes(directory) < LOW_SPACE:
            return _full(directory, said)
        uid = os.geteuid()
        if not os.access(directory, os.W_OK):
            return Cause(
                "read-only",
                f"the directory {directory} is not writable by uid {uid} ({said})",
                f"chown {uid} {directory} (SQLite writes the database's -wal and -shm files"
                " beside it), or point [state] url at a writable place",
            )
        if path.exists() and not os.access(path, os.W_OK):
            return Cause(
                "read-only",
                f"{path} is not writable by uid {uid} ({said})",
                f"chown {uid} {path}, or point [state] url at a writable place",
            )
    return Cause("other", said)


def recovery(path: Path | None) -> str:
    """The fix for a damaged database at ``path``."""
    return (
        f"restore {path} from a backup, or recover what is left with "
        f"`sqlite3 {path} .recover | sqlite3 NEW.db` and point [state] url at NEW.db"
    )


def _full(directory: Path, said: str) -> Cause:
    return Cause(
        "full",
        f"the file system holding {directory} is full ({said})",
        "free space on it; until then the store answers reads and refuses writes",
    )


def _read_only_mount(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _free_bytes(directory: Path) -> int:
    try:
        found = os.statvfs(directory)
    except OSError:
        return LOW_SPACE
    return found.f_bavail * found.f_frsize


def failure(exc: BaseException, path: Path, url: str) -> StoreError:
    """The :class:`StoreError` of ``exc`` from a request: :class:`StoreTimeout` when the
    call's deadline ended a wait for the lock, else the cause and its fix."""
    if isinstance(exc, StoreError):
        return exc
    cause = diagnose(exc, path)
    if cause.kind == "busy" and waits.expired():
        return StoreTimeout(
            f"state store {url!r} was locked by another writer until the call's deadline;"
            " nothing was changed"
        )
    return StoreError(f"state store {url!r} failed: {cause.reason}", fix=cause.fix)


def unavailable(exc: BaseException, path: Path, url: str) -> StoreUnavailable:
    """The :class:`StoreUnavailable` of ``exc``, raised while opening the store."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, StoreError):
        return StoreUnavailable(url, str(exc), fix=exc.fix)
    cause = diagnose(exc, path)
    return StoreUnavailable(url, cause.reason, fix=cause.fix)


@contextlib.contextmanager
def translated(path: Path, url: str) -> Iterator[None]:
    """apsw's and the filesystem's errors as :class:`StoreError` (see :func:`failure`)."""
    try:
        yield
    except (apsw.Error, OSError) as exc:
        raise failure(exc, path, url) from exc
