"""The sandbox uid's share of a workspace owned by root: POSIX ACL entries.

A root sidecar runs commands as ``shell.sandbox_uid`` (see :mod:`._sandbox`), while the
workspace -- made by toolcage as root, or by the operator -- and every file the file tools
write in it (they run in the root runtime) belong to root. Giving the directory away would
not be enough: a file written later by ``file_write`` would again be root's, mode 0644,
and a command could not append to it.

So the sidecar gives the sandbox uid two ACL entries on the workspace directory, and
nothing else changes hands:

- an *access* entry ``user:UID:rwx`` (with the mask ``rwx``): commands may create, rename
  and delete entries in the directory;
- a *default* entry ``user:UID:rwx``, which the kernel copies onto everything created in
  it afterwards, by anyone: files and directories made by the file tools or by commands are
  readable and writable by commands. The creating call's mode still caps the entry through
  the mask (a file created ``0666`` gets ``rw``), and the default ACL takes the umask's
  place: new entries get the directory's own group and other bits.

The owner, group and other bits stay what they were; files already in the workspace keep
their own permissions. The entries are written whole, as the ``system.posix_acl_*``
extended attributes (the kernel's binary form), so no ``setfacl`` is needed; a file system
without ACLs (``EOPNOTSUPP``) is reported to the caller, which falls back to ownership.

The runtime, built as root, makes the shared workspace and writes the entries at once
(:func:`prepare_workspace`): the file tools may write in it before any command starts the
sidecar.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
from pathlib import Path

_VERSION = 2
_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_UNDEFINED = 0xFFFFFFFF
_HEADER = struct.Struct("<I")
_ENTRY = struct.Struct("<HHI")
ACCESS = "system.posix_acl_access"
DEFAULT = "system.posix_acl_default"


def acl(owner: int, uid: int, group: int, other: int) -> bytes:
    """An ACL (kernel xattr form) with the owner, named ``uid`` (``rwx``), group, mask
    ``rwx`` and other entries; permissions as 3-bit values."""
    entries = (
        (_USER_OBJ, owner, _UNDEFINED),
        (_USER, 0o7, uid),
        (_GROUP_OBJ, group, _UNDEFINED),
        (_MASK, 0o7, _UNDEFINED),
        (_OTHER, other, _UNDEFINED),
    )
    return _HEADER.pack(_VERSION) + b"".join(_ENTRY.pack(*entry) for entry in entries)


def grant_workspace(path: Path, uid: int) -> None:
    """Give ``uid`` the access and default entries on the directory ``path`` (see the
    module docstring). :class:`OSError` (``EOPNOTSUPP`` without ACL support)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        owner, group, other = mode >> 6 & 7, mode >> 3 & 7, mode & 7
        os.setxattr(fd, DEFAULT, acl(0o7, uid, group, other))
        os.setxattr(fd, ACCESS, acl(owner, uid, group, other))
    finally:
        os.close(fd)


def prepare_workspace(path: Path, uid: int) -> None:
    """Make the shared workspace ``path`` if it is missing and give ``uid`` its entries,
    quietly: the runtime calls this when it is built as root, so that files the file tools
    write before the first command inherit the entries too; the sidecar grants again when
    it starts, and reports what fails."""
    with contextlib.suppress(OSError):
        path.mkdir(parents=True, exist_ok=True)
        grant_workspace(path, uid)
