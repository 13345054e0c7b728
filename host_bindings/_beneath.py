"""Opening files beneath a directory descriptor, with the kernel as the wall.

:func:`open_beneath` is ``openat2(dirfd, path, how)`` with ``RESOLVE_BENEATH |
RESOLVE_NO_MAGICLINKS``: the kernel refuses, during the lookup itself and so whatever is
renamed or relinked meanwhile, any path or symbolic link that would leave ``dirfd``'s tree
(``..`` above it, an absolute path or link target, ``/proc/self/fd/N``-style magic links),
with ``EXDEV``. Links that stay beneath are followed. Python has no ``openat2``, so it is
called through :mod:`ctypes` by its syscall number (437 on every architecture with the
generic table, x86_64 included); on an unknown architecture or a kernel before 5.6 every
open fails with ``ENOSYS`` -- closed, never open.

:func:`read_into` and :func:`pread_into` read straight into a memory view (of a guest's
linear memory), so no bytes object is made per read.

:func:`wasi_errno` turns an ``OSError`` into a WASI errno value, the numbering guests'
``errno`` uses; an escape (``EXDEV``) becomes ``ENOTCAPABLE``, as WASI reports it.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform

O_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""How files are opened for reading: a FIFO or a terminal never blocks or becomes ours."""
O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
"""How directories are opened for listing."""

RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_BENEATH = 0x08

_SYSCALL_OPENAT2 = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437}.get(
    platform.machine()
)
_RETRIES = 8
"""Lookups retried when the kernel reports a concurrent rename (``EAGAIN``)."""


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.argtypes = (ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t)
_syscall.restype = ctypes.c_long

_hows: dict[int, _OpenHow] = {}


def how_for(flags: int) -> int:
    """The address of a (kept) ``open_how`` with ``flags``, beneath and without magic links."""
    how = _hows.get(flags)
    if how is None:  # setdefault: a struct, once published, is never replaced (or freed)
        how = _hows.setdefault(flags, _OpenHow(flags, 0, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS))
    return ctypes.addressof(how)


_HOW_SIZE = ctypes.sizeof(_OpenHow)


def open_beneath(dirfd: int, path: bytes, how: int) -> int:
    """A descriptor for ``path`` resolved strictly beneath ``dirfd``; ``OSError`` if not.

    ``how`` comes from :func:`how_for`; ``path`` must hold no NUL byte (the caller checks:
    C would cut the name there).
    """
    if _SYSCALL_OPENAT2 is None:
        raise OSError(errno.ENOSYS, "openat2 is not known on this architecture")
    for _ in range(_RETRIES):
        fd: int = _syscall(_SYSCALL_OPENAT2, dirfd, path, how, _HOW_SIZE)
        if fd >= 0:
            return fd
        err = ctypes.get_errno()
        if err not in (errno.EAGAIN, errno.EINTR):
            raise OSError(err, os.strerror(err))
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def read_into(fd: int, view: memoryview, start: int, size: int, expected: int) -> int:
    """Read up to ``size`` bytes from ``fd`` into ``view[start:]``; the bytes read.

    A read that reaches ``expected`` bytes (the file's size when it was opened) is taken as
    the end of the file, so a file smaller than the buffer costs one ``read``; one that
    grew meanwhile is read on up to the buffer's end.
    """
    done = 0
    while done < size:
        n = os.readv(fd, (view[start + done : start + size],))
        if n == 0:
            break
        done += n
        if done == expected:
            break
    return done


def pread_into(fd: int, view: memoryview, start: int, size: int, offset: int) -> int:
    """Read up to ``size`` bytes of ``fd`` from ``offset`` into ``view[start:]``."""
    done = 0
    while done < size:
        n = os.preadv(fd, (view[start + done : start + size],), offset + done)
        if n == 0:
            break
        done += n
    return done


_WASI_NAMES = (  # noqa: SIM905 - one name a line would take 77 lines
    "SUCCESS 2BIG ACCES ADDRINUSE ADDRNOTAVAIL AFNOSUPPORT AGAIN ALREADY BADF BADMSG BUSY "
    "CANCELED CHILD CONNABORTED CONNREFUSED CONNRESET DEADLK DESTADDRREQ DOM DQUOT EXIST "
    "FAULT FBIG HOSTUNREACH IDRM ILSEQ INPROGRESS INTR INVAL IO ISCONN ISDIR LOOP MFILE "
    "MLINK MSGSIZE MULTIHOP NAMETOOLONG NETDOWN NETRESET NETUNREACH NFILE NOBUFS NODEV "
    "NOENT NOEXEC NOLCK NOLINK NOMEM NOMSG NOPROTOOPT NOSPC NOSYS NOTCONN NOTDIR NOTEMPTY "
    "NOTRECOVERABLE NOTSOCK NOTSUP NOTTY NXIO OVERFLOW OWNERDEAD PERM PIPE PROTO "
    "PROTONOSUPPORT PROTOTYPE RANGE ROFS SPIPE SRCH STALE TIMEDOUT TXTBSY XDEV NOTCAPABLE"
).split()
"""WASI preview 1's errno values, in their numeric order (``wasi/api.h``)."""

WASI = {name: number for number, name in enumerate(_WASI_NAMES)}
_BY_HOST = {code: WASI[name[1:]] for code, name in errno.errorcode.items() if name[1:] in WASI}
_BY_HOST[errno.EXDEV] = WASI["NOTCAPABLE"]  # RESOLVE_BENEATH refused a way out
if hasattr(errno, "EOPNOTSUPP"):
    _BY_HOST[errno.EOPNOTSUPP] = WASI["NOTSUP"]


def wasi_errno(exc: OSError) -> int:
    """The WASI errno value for ``exc`` (``EIO`` when it has no counterpart)."""
    return _BY_HOST.get(exc.errno or 0, WASI["IO"]) if exc.errno else WASI["IO"]
