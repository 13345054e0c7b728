"""One call's files for the ``fs`` binding: its mounts, its directory handles, its reads.

:class:`CallFiles` maps a canonical guest path to the granted mount with the longest
matching guest path, opens that mount's directory once per call (``O_PATH``) and everything
else beneath it with ``openat2`` (:mod:`._beneath`); it holds the call's directory handles
until the guest closes them or the call ends (:meth:`CallState.release`). :func:`listing`
and :func:`read_files` produce the binary answers of ``list`` and ``read_many`` (formats in
:mod:`._fs`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import struct
from stat import S_ISDIR, S_ISREG

from toolcage.policies import GrantedMount

from ._base import CallState
from ._beneath import O_DIR, O_READ, WASI, how_for, read_into, wasi_errno

MAX_HANDLES = 1024
"""Directory handles a call may hold open at once (``EMFILE`` beyond)."""

INFO = struct.Struct("<QIBBxx")
RECORD = struct.Struct("<IIQIBBxx")
"""errno, length, then the info."""
ENTRY = struct.Struct("<QHBx")
NO_SIZE = 2**64 - 1
OTHER, FILE, DIRECTORY, LINK = 0, 1, 2, 3

_O_MOUNT = os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC
HOW_FILE = how_for(O_READ)
HOW_DIR = how_for(O_DIR)
HOW_ENTRY_DIR = how_for(O_DIR | os.O_NOFOLLOW)
HOW_PATH = how_for(os.O_PATH | os.O_CLOEXEC)
_O_ENTRY_FILE = O_READ | os.O_NOFOLLOW
_NOT_ENTRIES = frozenset((b"", b".", b".."))
_EINVAL, _EISDIR, _ENXIO = WASI["INVAL"], WASI["ISDIR"], WASI["NXIO"]


class FsError(Exception):
    """A file-system failure for the guest, as a WASI errno value."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.errno = WASI[name]


def entry_type(mode: int) -> int:
    if stat.S_ISREG(mode):
        return FILE
    if stat.S_ISDIR(mode):
        return DIRECTORY
    return LINK if stat.S_ISLNK(mode) else OTHER


def regular(fd: int) -> os.stat_result:
    """``fd``'s status; a directory is ``EISDIR``, anything else not regular ``ENXIO``."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise FsError("ISDIR" if stat.S_ISDIR(st.st_mode) else "NXIO")
    return st


def component(name: bytes) -> bytes:
    if not name or name in (b".", b"..") or b"/" in name or b"\0" in name:
        raise FsError("INVAL")
    return name


@functools.lru_cache(maxsize=256)
def mount_table(mounts: tuple[GrantedMount, ...]) -> tuple[tuple[bytes, bytes, bytes], ...]:
    """``(guest path, guest path + "/", host path)`` of ``mounts``, longest guest path first."""
    table = []
    for mount in mounts:
        guest = mount.guest.encode().rstrip(b"/")
        table.append((guest, guest + b"/", os.fsencode(mount.host)))
    return tuple(sorted(table, key=lambda m: len(m[0]), reverse=True))


class CallFiles:
    """One call's view of its mounts: their descriptors and its directory handles."""

    def __init__(self, state: CallState) -> None:
        self._mounts = mount_table(state.mounts)
        self._roots: dict[bytes, int] = {}
        self._dirs: dict[int, int] = {}
        self._next = 1
        self.listing: tuple[int, int, bytes] | None = None
        """The last listing too long for its buffer: (handle, sizes, bytes)."""

    def locate(self, path: bytes) -> tuple[int, bytes]:
        """The mount descriptor and the path relative to it; ENOTCAPABLE outside every mount."""
        if b"\0" in path:
            raise FsError("INVAL")
        for guest, prefix, host in self._mounts:
            if path.startswith(prefix) or path == guest:
                root = self._roots.get(host)
                if root is None:
                    root = self._roots[host] = os.open(host, _O_MOUNT)
                return root, path[len(prefix) :].lstrip(b"/") or b"."
        raise FsError("NOTCAPABLE")

    def add(self, fd: int) -> int:
        if len(self._dirs) >= MAX_HANDLES:
            os.close(fd)
            raise FsError("MFILE")
        handle, self._next = self._next, self._next + 1
        self._dirs[handle] = fd
        return handle

    def dir(self, handle: int) -> int:
        fd = self._dirs.get(handle)
        if fd is None:
            raise FsError("BADF")
        return fd

    def drop(self, handle: int) -> None:
        fd = self._dirs.pop(handle, None)
        if fd is None:
            raise FsError("BADF")
        if self.listing is not None and self.listing[0] == handle:
            self.listing = None
        os.close(fd)

    def close(self) -> None:
        fds = [*self._dirs.values(), *self._roots.values()]
        self._dirs, self._roots, self.listing = {}, {}, None
        for fd in fds:
            with contextlib.suppress(OSError):  # each is closed whatever another does
                os.close(fd)


def call_files(state: CallState) -> CallFiles:
    return state.resources.get("fs", lambda: CallFiles(state))


def listing(fd: int, sizes: bool) -> bytes:
    parts: list[bytes] = []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                name = entry.name.encode("utf-8")
            except UnicodeEncodeError:
                raise FsError("ILSEQ") from None
            try:
                if sizes:
                    st = entry.stat(follow_symlinks=False)
                    kind, size = entry_type(st.st_mode), st.st_size
                else:  # from the entry's d_type, no stat; the most common kind first
                    size = NO_SIZE
                    if entry.is_file(follow_symlinks=False):
                        kind = FILE
                    elif entry.is_dir(follow_symlinks=False):
                        kind = DIRECTORY
                    else:
                        kind = LINK if entry.is_symlink() else OTHER
            except FileNotFoundError:
                continue  # removed since it was listed
            parts.append(ENTRY.pack(size, len(name), kind))
            parts.append(name)
    return b"".join(parts)


def read_files(
    dirfd: int, names: list[bytes], each: int, view: memoryview, start: int, cap: int
) -> int:
    """Write ``read_many``'s records of ``names`` (files of ``dirfd``) to ``view[start:]``, at
    most ``cap`` bytes; the bytes written.

    The loop runs once per file of a search, so it is kept to its system calls -- ``openat``,
    ``fstat``, one ``read`` for a file shorter than its window, ``close`` -- with the
    functions it calls bound to locals. A name is one component (no ``/``, not ``.`` or
    ``..``) opened with ``O_NOFOLLOW`` in ``dirfd`` itself, so ``openat`` is as strict here as
    ``openat2(RESOLVE_BENEATH)``: the lookup reads one entry of ``dirfd`` and refuses it when
    it is a symbolic link (magic links included), with nothing of it left to resolve; it
    spares the ``ctypes`` call, more than half the cost of the open.
    """
    end, at, header = start + cap, start, RECORD.size
    pack, opener, fstat, readv, close = RECORD.pack_into, os.open, os.fstat, os.readv, os.close
    for name in names:
        room = end - at - header
        window = each if each < room else room
        if window < 0:
            break
        body = at + header
        n = size = nlink = err = 0
        if b"/" in name or name in _NOT_ENTRIES:
            err = _EINVAL
        else:
            try:
                fd = opener(name, _O_ENTRY_FILE, dir_fd=dirfd)
            except OSError as exc:
                err = wasi_errno(exc)
            else:
                try:
                    st = fstat(fd)
                    size, nlink, mode = st.st_size, st.st_nlink, st.st_mode
                    if not S_ISREG(mode):
                        err = _EISDIR if S_ISDIR(mode) else _ENXIO
                    elif at > start and window < (each if each < size else size):
                        break  # its window does not fit: the next call reads it
                    elif window:
                        n = readv(fd, (view[body : body + window],))
                        if n and n < window and n != size:  # a short read: read on
                            n += read_into(fd, view, body + n, window - n, size - n)
                except OSError as exc:
                    err = wasi_errno(exc)
                finally:
                    close(fd)
        pack(view, at, err, n, size, nlink, FILE, n < window or n >= size)
        at = body + n
    return at - start
