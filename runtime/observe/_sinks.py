"""Where audit records go: a file rotated by size, or the embedder's handler.

A sink's ``write`` takes a batch of records and either writes them all or raises;
:class:`PartialWrite` says how many of the batch went out before it failed. Sinks run on
the audit writer's thread only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._records import encode

AuditHandler = Callable[[dict[str, Any]], None]
"""The embedder's sink: called with each record (a plain JSON-ready dict, already
redacted) on the audit writer's thread. It may block or raise; a call never waits for it."""


class PartialWrite(Exception):
    """The first ``written`` records of a batch went out; then the sink failed."""

    def __init__(self, written: int, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.written = written
        self.cause = cause
        """What failed."""


class HandlerSink:
    """Hands each record to the embedder's :data:`AuditHandler`."""

    def __init__(self, handler: AuditHandler) -> None:
        self.handler = handler

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        for written, record in enumerate(records):
            try:
                self.handler(dict(record))
            except Exception as exc:
                if written:
                    raise PartialWrite(written, exc) from exc
                raise


class FileSink:
    """Appends JSON lines to a file (created 0600), rotated before it passes a size.

    Processes that share one log coordinate through ``PATH.lock`` (created 0600 beside
    it): a writer holds an exclusive :func:`fcntl.flock` on it while it appends a batch and
    while it rotates, and opens the log only once it holds the lock, so it always appends
    to the current file and sees its real size. A batch goes out as one ``O_APPEND``
    write per file. A short or failed write is rolled back to the end of the last whole
    line it wrote (``ftruncate``: no other writer can have appended meanwhile, they wait
    for the lock), and :class:`PartialWrite` tells the writer how many records landed, so
    a retry neither tears a line nor repeats a record.

    Rotation renames ``PATH.N-1`` to ``PATH.N`` .. ``PATH`` to ``PATH.1`` (each an atomic
    rename; the oldest beyond ``keep`` is replaced), so a reader sees whole files only. A
    file that was moved away or removed is created again (its directory too); a link in
    place of the log or of the lock is refused (``O_NOFOLLOW``).
    """

    def __init__(self, path: Path, *, rotate_bytes: int, keep: int) -> None:
        self.path = path
        self.rotate_bytes = rotate_bytes
        self.keep = keep
        self.lock_path = lock_path(path)
        """The file whose ``flock`` every writer of this log holds while it writes."""

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        lines = [encode(record) for record in records]
        written = 0
        try:
            with self._locked():
                fd = self._open()
                try:
                    while written < len(lines):
                        size = os.fstat(fd).st_size
                        end, grown = written, size
                        while end < len(lines) and (
                            grown == 0 or grown + len(lines[end]) <= self.rotate_bytes
                        ):
                            grown += len(lines[end])
                            end += 1
                        if end == written:  # the file is full: the next line goes to a new one
                            os.close(fd)
                            fd = -1
                            self._rotate()
                            fd = self._open()
                            continue
                        _append(fd, size, lines[written:end])
                        written = end
                finally:
                    if fd >= 0:
                        os.close(fd)
        except PartialWrite as exc:
            written += exc.written
            error: Exception = exc.cause
        except Exception as exc:
            error = exc
        else:
            return
        if written:
            raise PartialWrite(written, error) from error
        raise error

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return _holding(self.lock_path, fcntl.LOCK_EX)

    def _open(self) -> int:
        # Read too: an append checks that the file ends with a whole line (see _append).
        return _open_creating(self.path, os.O_RDWR | os.O_APPEND)

    def _rotate(self) -> None:
        if self.keep == 0:
            self.path.unlink(missing_ok=True)
            return
        for number in range(self.keep - 1, 0, -1):
            older = rotated(self.path, number)
            if older.exists():
                os.replace(older, rotated(self.path, number + 1))
        os.replace(self.path, rotated(self.path, 1))


def lock_path(path: Path) -> Path:
    """The lock file of the log at ``path``."""
    return path.with_name(f"{path.name}.lock")


def rotations_held(path: Path) -> contextlib.AbstractContextManager[None]:
    """Keep every writer of the log at ``path`` from rotating it while a reader lists its
    files (a shared lock): between two renames of a rotation a listing would meet one
    file twice, or stop at a number just moved up. Nothing is held for a log that no
    writer has locked yet."""
    return _holding(lock_path(path), fcntl.LOCK_SH)


@contextlib.contextmanager
def _holding(lock: Path, operation: int) -> Iterator[None]:
    """Hold ``flock(operation)`` on ``lock``. A lock file replaced while this process
    waited (it is never removed by a writer) is locked again, so that everyone locks the
    same file. Writers create it; a reader that finds none holds nothing."""
    while True:
        if operation == fcntl.LOCK_EX:
            fd = _open_creating(lock, os.O_RDWR)
        else:
            try:
                fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                fd = -1
            if fd < 0:
                yield
                return
        try:
            fcntl.flock(fd, operation)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                same = False
            if same:
                yield
                return
        finally:
            os.close(fd)  # which releases the lock


def _open_creating(path: Path, flags: int) -> int:
    """Open ``path`` (created 0600, never through a link), making a missing directory
    owner-only."""
    flags |= os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        return os.open(path, flags, 0o600)
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return os.open(path, flags, 0o600)


def _append(fd: int, size: int, lines: Sequence[bytes]) -> None:
    """Append ``lines`` to the file of ``fd`` (``size`` bytes long) with one write, or
    cut the file back to its last whole line and raise :class:`PartialWrite`.

    A file that does not end with a newline (its tail torn by a cut that failed, or by a
    writer of another kind) gets one first, so the torn bytes stay a line of their own."""
    lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
    data = memoryview(lead + b"".join(lines))
    done = 0
    try:
        while done < len(data):  # a regular file takes it all at once unless it is full
            done += os.write(fd, data[done:])
    except OSError as exc:
        kept, whole = 0, len(lead)
        while kept < len(lines) and whole + len(lines[kept]) <= done:
            whole += len(lines[kept])
            kept += 1
        if done > whole:
            with contextlib.suppress(OSError):  # then the next append starts a new line
                os.ftruncate(fd, size + whole)
        raise PartialWrite(kept, exc) from exc


def rotated(path: Path, number: int) -> Path:
    """The ``number``-th rotated file of ``path`` (1: the newest)."""
    return path.with_name(f"{path.name}.{number}")


def log_files(path: Path) -> list[Path]:
    """The log and its rotated files that exist, oldest first."""
    found = []
    number = 1
    while (older := rotated(path, number)).exists():
        found.append(older)
        number += 1
    found.reverse()
    if path.exists():
        found.append(path)
    return found


AuditSink = FileSink | HandlerSink
"""Where the writer sends records."""
