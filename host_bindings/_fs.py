"""The ``fs`` binding: guests read files under the call's mounts, served in the guest's thread.

WASI file operations of wasmtime's C API each run on a thread of wasmtime's own pool (two
thread wake-ups per operation); these imports read in the thread that runs the guest, with
few host calls, straight into the guest's memory. Only reads: nothing here creates, changes
or removes anything, so a read-only mount stays read-only.

Paths are the canonical guest paths a tool got (``/workspace/src/a.py``). Each maps to the
granted mount with the longest matching guest path (:attr:`CallState.mounts`: the mounts of
the call's tool and tier, nothing else) and is opened relative to that mount's directory
with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`` (:mod:`._beneath`): the kernel
refuses every way out, races included; links that stay beneath are followed, as WASI does.
Files are opened non-blocking and must be regular files (``fstat``), so a FIFO or a device
is refused, never read. Directory handles and the mounts' descriptors belong to the call
(:class:`CallResources`) and are closed when its guest has ended::

    module toolcage_fs_v1                                                       returns
    read(path_ptr, path_len, offset i64, buf_ptr, buf_cap, info_ptr)         -> bytes read
    stat(path_ptr, path_len, info_ptr)                                       -> 0
    opendir(path_ptr, path_len)                                              -> handle
    opendir_at(dir, name_ptr, name_len)                                      -> handle
    list(dir, buf_ptr, buf_cap, sizes)                                       -> listing length
    read_many(dir, names_ptr, names_len, each, buf_ptr, buf_cap)             -> bytes written
    close(dir)                                                               -> 0

All arguments are ``i32`` but ``offset``; all results ``i32``. ``info`` is 16 bytes,
little-endian: ``u64 size, u32 nlink, u8 type, u8 complete, u16 0`` (type 0 other, 1
regular file, 2 directory, 3 symbolic link; ``complete``: the read reached the file's end).

- ``read`` reads the regular file ``path`` from ``offset`` into the buffer, up to its end or
  the buffer's, in one open; ``stat`` describes ``path`` (links followed, nothing opened for
  reading).
- ``opendir`` opens the directory ``path``; ``opendir_at`` its entry ``name`` (one
  component, a link not followed). ``close`` frees a handle; the call's end frees the rest.
- ``list`` writes every entry but ``.`` and ``..``: 12 bytes ``u64 size, u16 name_len, u8
  type, u8 0`` then the name (``size`` is the entry's own ``lstat`` size when ``sizes`` is
  1, else 2**64-1). A directory holding a name that is not UTF-8 is ``EILSEQ`` (WASI shows
  guests only UTF-8 names). When the listing is longer than ``buf_cap`` nothing is written
  and its length is returned: call again with a buffer that large.
- ``read_many`` reads the files of directory ``dir`` named in ``names`` (each followed by a
  NUL; one component, links not followed: ``openat(O_NOFOLLOW)`` in ``dir``, as strict
  for one component as ``openat2`` and cheaper), in order, each up to ``each`` bytes, as
  records: 24 bytes ``u32 errno, u32 length, info`` then ``length`` bytes. It stops before
  a file whose window would not fit (always writing the first); the guest sends the names
  left again.

A negative result is an ABI error (-1 to -7, :mod:`._abi`) or ``-(1000 + errno)`` for a
file-system error; errno values are WASI's (the guests' ``errno.h``), an escape reported as
``ENOTCAPABLE`` as WASI does.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

import wasmtime

from ._abi import I32, AbiError, GuestError, call_state, guarded, module_name
from ._beneath import open_beneath, pread_into, read_into, wasi_errno
from ._fs_files import (
    FILE,
    HOW_DIR,
    HOW_ENTRY_DIR,
    HOW_FILE,
    HOW_PATH,
    INFO,
    RECORD,
    FsError,
    call_files,
    component,
    entry_type,
    listing,
    read_files,
    regular,
)

FS_ERROR_BASE = 1000
MAX_PATH_BYTES = 4096
MAX_NAMES_BYTES = 1 << 20
I64 = wasmtime.ValType.i64()

_memory_view = ctypes.pythonapi.PyMemoryView_FromMemory
_memory_view.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
_memory_view.restype = ctypes.py_object
_PYBUF_WRITE = 0x200


def caller_memory(caller: wasmtime.Caller) -> memoryview | None:
    """The caller's exported ``memory`` as a writable view, valid during the host call."""
    memory = caller.get("memory")
    if not isinstance(memory, wasmtime.Memory):
        return None
    base = ctypes.cast(memory.data_ptr(caller), ctypes.c_void_p).value
    view: memoryview = _memory_view(base, memory.data_len(caller), _PYBUF_WRITE)
    return view


class _Memory:
    """The guest's linear memory during one host call, bounds-checked."""

    __slots__ = ("size", "view")

    def __init__(self, view: memoryview | None) -> None:
        if view is None:
            raise GuestError(AbiError.FAULT)
        # Valid for this host call only: the guest does not run (or grow its memory) meanwhile.
        self.view = view
        self.size = len(view)

    def at(self, ptr: int, length: int) -> int:
        """The offset of guest bytes ``[ptr, ptr + length)``; FAULT outside the memory."""
        start = ptr & 0xFFFFFFFF
        if length < 0 or start + length > self.size:
            raise GuestError(AbiError.FAULT)
        return start

    def read(self, ptr: int, length: int, limit: int) -> bytes:
        if length > limit:
            raise GuestError(AbiError.TOO_BIG)
        start = self.at(ptr, length)
        return bytes(self.view[start : start + length])


RawHostFunction = Callable[..., int]
"""A host function of this module: (the caller's memory view or None, *arguments) -> i32."""
RawDefiner = Callable[[wasmtime.Linker, str, str, list[str], RawHostFunction], None]
"""Defines ``module.name`` taking ``"i32"``/``"i64"`` arguments, returning an ``i32``, that
calls a :data:`RawHostFunction`."""


def define_with_caller(
    linker: wasmtime.Linker, module: str, name: str, params: list[str], func: RawHostFunction
) -> None:
    """A :data:`RawDefiner` on wasmtime-py's public ``define_func`` (a ``Caller`` per call)."""
    kinds = {"i32": I32, "i64": I64}

    def call(caller: wasmtime.Caller, *args: int) -> int:
        return func(caller_memory(caller), *args)

    signature = wasmtime.FuncType([kinds[p] for p in params], [I32])
    linker.define_func(module, name, signature, call, True)


_FUNCTIONS: tuple[tuple[str, list[str], RawHostFunction], ...]


class FsBinding:
    """Capability ``fs``: read-only file access under the call's mounts (module docstring).

    ``define_raw`` defines each import; the runtime passes one that spares wasmtime-py's
    per-call wrappers (a host call is then a few microseconds, not ~20).
    """

    name = "fs"

    def __init__(self, define_raw: RawDefiner = define_with_caller) -> None:
        self._define_raw = define_raw

    def define(self, linker: wasmtime.Linker) -> None:
        module = module_name(self.name)
        for name, params, func in _FUNCTIONS:
            self._define_raw(linker, module, name, params, func)


def _failure(exc: Exception) -> int:
    code = exc.errno if isinstance(exc, FsError) else wasi_errno(exc)  # type: ignore[arg-type]
    return -(FS_ERROR_BASE + code)


@guarded
def _read(
    view: memoryview | None, ptr: int, length: int, offset: int, buf: int, cap: int, info: int
) -> int:
    files = call_files(call_state())
    memory = _Memory(view)
    path = memory.read(ptr, length, MAX_PATH_BYTES)
    start, info_at = memory.at(buf, cap), memory.at(info, INFO.size)
    if offset < 0:
        raise GuestError(AbiError.INVALID)
    try:
        root, rel = files.locate(path)
        fd = open_beneath(root, rel, HOW_FILE)
        try:
            st = regular(fd)
            if offset:
                n = pread_into(fd, memory.view, start, cap, offset)
            else:
                n = read_into(fd, memory.view, start, cap, st.st_size)
        finally:
            os.close(fd)
    except (FsError, OSError) as exc:
        return _failure(exc)
    complete = n < cap or offset + n >= st.st_size
    INFO.pack_into(memory.view, info_at, st.st_size, st.st_nlink, FILE, complete)
    return n


@guarded
def _stat(view: memoryview | None, ptr: int, length: int, info: int) -> int:
    files = call_files(call_state())
    memory = _Memory(view)
    path = memory.read(ptr, length, MAX_PATH_BYTES)
    info_at = memory.at(info, INFO.size)
    try:
        root, rel = files.locate(path)
        fd = open_beneath(root, rel, HOW_PATH)
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
    except (FsError, OSError) as exc:
        return _failure(exc)
    INFO.pack_into(memory.view, info_at, st.st_size, st.st_nlink, entry_type(st.st_mode), False)
    return 0


@guarded
def _opendir(view: memoryview | None, ptr: int, length: int) -> int:
    files = call_files(call_state())
    path = _Memory(view).read(ptr, length, MAX_PATH_BYTES)
    try:
        root, rel = files.locate(path)
        return files.add(open_beneath(root, rel, HOW_DIR))
    except (FsError, OSError) as exc:
        return _failure(exc)


@guarded
def _opendir_at(view: memoryview | None, handle: int, ptr: int, length: int) -> int:
    files = call_files(call_state())
    name = _Memory(view).read(ptr, length, MAX_PATH_BYTES)
    try:
        return files.add(open_beneath(files.dir(handle), component(name), HOW_ENTRY_DIR))
    except (FsError, OSError) as exc:
        return _failure(exc)


@guarded
def _list(view: memoryview | None, handle: int, buf: int, cap: int, sizes: int) -> int:
    files = call_files(call_state())
    memory = _Memory(view)
    start = memory.at(buf, cap)
    cached = files.listing
    try:
        if cached is not None and cached[:2] == (handle, sizes):
            data = cached[2]
        else:
            data = listing(files.dir(handle), bool(sizes))
    except (FsError, OSError) as exc:
        return _failure(exc)
    if len(data) > cap:
        files.listing = (handle, sizes, data)
    else:
        files.listing = None
        memory.view[start : start + len(data)] = data
    return len(data)


@guarded
def _read_many(
    view: memoryview | None, handle: int, ptr: int, length: int, each: int, buf: int, cap: int
) -> int:
    files = call_files(call_state())
    memory = _Memory(view)
    names = memory.read(ptr, length, MAX_NAMES_BYTES).split(b"\0")
    if names[-1] == b"":
        names.pop()
    start = memory.at(buf, cap)
    if cap < RECORD.size or each < 0:
        raise GuestError(AbiError.SHORT_BUF if cap < RECORD.size else AbiError.INVALID)
    try:
        dirfd = files.dir(handle)
    except FsError as exc:
        return _failure(exc)
    return read_files(dirfd, names, each, memory.view, start, cap)


@guarded
def _close(view: memoryview | None, handle: int) -> int:
    del view
    try:
        call_files(call_state()).drop(handle)
    except FsError as exc:
        return _failure(exc)
    return 0


_FUNCTIONS = (
    ("read", ["i32", "i32", "i64", "i32", "i32", "i32"], _read),
    ("stat", ["i32", "i32", "i32"], _stat),
    ("opendir", ["i32", "i32"], _opendir),
    ("opendir_at", ["i32", "i32", "i32"], _opendir_at),
    ("list", ["i32", "i32", "i32", "i32"], _list),
    ("read_many", ["i32", "i32", "i32", "i32", "i32", "i32"], _read_many),
    ("close", ["i32"], _close),
)
