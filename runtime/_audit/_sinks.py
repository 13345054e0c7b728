"""Where audit records go: a file rotated by size, or the embedder's handler.

A sink's ``write`` takes a batch of records and either writes them all or raises;
:class:`PartialWrite` says how many of the batch went out before it failed. Sinks run on
the audit writer's thread only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ._records import encode

AuditHandler = Callable[[dict[str, Any]], None]
"""The embedder's sink: called with each record (a plain JSON-ready dict, already
redacted) on the audit writer's thread. It may block or raise; a call never waits for it."""


class PartialWrite(Exception):
    """The first ``written`` records of a batch went out; then the sink failed."""

    def __init__(self, written: int, cause: BaseException) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.written = written


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

    Rotation renames ``PATH.N-1`` to ``PATH.N`` .. ``PATH`` to ``PATH.1`` (each an atomic
    rename; the oldest beyond ``keep`` is replaced), so a reader sees whole files only. The
    file is opened for each batch with ``O_APPEND``, so a file that was moved away or
    removed is created again (its directory too), and processes sharing one log never
    interleave their lines; a link in its place is refused (``O_NOFOLLOW``).
    """

    def __init__(self, path: Path, *, rotate_bytes: int, keep: int) -> None:
        self.path = path
        self.rotate_bytes = rotate_bytes
        self.keep = keep

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        lines = [encode(record) for record in records]
        fd = self._open()
        try:
            size = os.fstat(fd).st_size
            start = 0
            while start < len(lines):
                end, grown = start, size
                while end < len(lines) and (
                    grown == 0 or grown + len(lines[end]) <= self.rotate_bytes
                ):
                    grown += len(lines[end])
                    end += 1
                if end == start:  # the file is full: the next line goes to a new one
                    os.close(fd)
                    fd = -1
                    self._rotate()
                    fd = self._open()
                    size = 0
                    continue
                _write_all(fd, b"".join(lines[start:end]))
                size, start = grown, end
        finally:
            if fd >= 0:
                os.close(fd)

    def _open(self) -> int:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        try:
            return os.open(self.path, flags, 0o600)
        except FileNotFoundError:  # its directory is missing: made owner-only
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            return os.open(self.path, flags, 0o600)

    def _rotate(self) -> None:
        if self.keep == 0:
            self.path.unlink(missing_ok=True)
            return
        for number in range(self.keep - 1, 0, -1):
            older = rotated(self.path, number)
            if older.exists():
                os.replace(older, rotated(self.path, number + 1))
        os.replace(self.path, rotated(self.path, 1))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
