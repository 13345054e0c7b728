"""A way in for the sandbox uid to a workspace beneath directories only root may enter.

A root sidecar starts bubblewrap as ``shell.sandbox_uid`` (see :mod:`._sandbox`), and
bubblewrap resolves the path of every directory it binds as that uid -- even
``--bind-fd``, which turns the descriptor back into its path with ``realpath`` before it
mounts. A workspace beneath a directory of mode ``0700`` (``/root``, anything under
``mktemp -d``) is then out of reach, and making that directory searchable would open the
operator's own directory to every user of the machine.

Instead the sidecar, before it starts anything else, moves into a mount namespace of its
own and binds the workspace there onto an empty directory that every user may pass through
(``0711``, in the temporary directory). bubblewrap, started from that namespace, binds that
path; the host's mount table never changes and the operator's directories keep their
modes. The namespace belongs to a user namespace that maps every id to itself (the
sidecar keeps its uid, and files keep their owners), which is what lets the sidecar mount
without ``CAP_SYS_ADMIN`` in the host's user namespace -- as in a container -- and it
gives the sidecar no power over the host it did not have: it has less, since its
capabilities now count only inside its own namespaces. The sidecar must still be
single-threaded here (the kernel refuses ``unshare(CLONE_NEWUSER)`` otherwise).

The ids are mapped by a child that stays in the host's user namespace (a process cannot
map ids for itself beyond its own); mounts made afterwards on the host reach the
namespace (``MS_SLAVE``), none made in it reach the host. :meth:`Passage.close` detaches
the bind and removes the empty directory; a sidecar killed outright leaves only that
empty directory behind, since its namespace ends with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import tempfile
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_SLAVE = 0x80000
MNT_DETACH = 2
PREFIX = "toolcage-workspace-"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


class Passage:
    """The workspace bound at :attr:`path` in the sidecar's own mount namespace."""

    def __init__(self, workspace: Path, *, parent: Path | None = None) -> None:
        """Enter the namespaces and bind ``workspace`` (see the module docstring);
        :class:`OSError` when the kernel refuses, with nothing changed for the host."""
        _enter_own_namespaces()
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        """Where bubblewrap finds the workspace."""
        try:
            self.path.chmod(0o711)  # passable by the sandbox uid, never listable
            _check(_libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None), "mount --make-rslave /")
            source = os.fsencode(workspace)
            _check(
                _libc.mount(source, os.fsencode(self.path), None, MS_BIND | MS_REC, None),
                f"bind {workspace}",
            )
        except BaseException:
            self.path.rmdir()
            raise

    def close(self) -> None:
        """Detach the bind and remove the directory it was on (idempotent). Never a
        recursive removal: while the bind holds, the directory *is* the workspace."""
        target = os.fsencode(self.path)
        if _libc.umount2(target, MNT_DETACH) != 0 and ctypes.get_errno() != errno.EINVAL:
            return  # still bound: leave the directory rather than risk its contents
        with contextlib.suppress(FileNotFoundError):
            self.path.rmdir()


def _enter_own_namespaces() -> None:
    """``unshare(CLONE_NEWUSER | CLONE_NEWNS)``, with every id mapped to itself by a child
    that stays behind in the host's user namespace."""
    go_read, go_write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's outcome is its exit status
        status = 1
        try:
            os.close(go_write)
            if os.read(go_read, 1) == b"y":
                _map_identity(parent)
                status = 0
        finally:
            os._exit(status)
    os.close(go_read)
    failure: OSError | None = None
    try:
        if _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
            code = ctypes.get_errno()
            failure = OSError(code, f"unshare: {os.strerror(code)}")
    finally:
        os.write(go_write, b"n" if failure else b"y")
        os.close(go_write)
        _, status = os.waitpid(pid, 0)
    if failure is not None:
        raise failure
    if status != 0:
        raise OSError(errno.EPERM, "cannot map the ids of the sidecar's user namespace")


def _map_identity(pid: int) -> None:
    """Map each id of this user namespace to itself in ``pid``'s new one."""
    for kind in ("uid", "gid"):
        ranges = Path(f"/proc/self/{kind}_map").read_text().split("\n")
        lines = []
        for line in ranges:
            fields = line.split()
            if len(fields) == 3:
                lines.append(f"{fields[0]} {fields[0]} {fields[2]}\n")
        with open(f"/proc/{pid}/{kind}_map", "w") as mapping:
            mapping.write("".join(lines))
