"""Canonicalising a guest path the way the kernel will resolve it, before a guest runs.

A guest names files by guest paths (``/workspace/src/a.c``, or ``src/a.c`` relative to
``/workspace``). :func:`canonical_guest_path` walks such a path one component at a time
over the real host directories behind the granted mounts, exactly as path resolution in the
kernel does:

- each existing component is ``lstat``-ed (once: the last one's status also serves the
  file-kind check below); a symlink is replaced by its target *before*
  the components after it are looked at, so ``link/..`` is the parent of the link's
  target, not the directory holding the link (purely textual normalisation gets this
  wrong);
- a relative target continues from the link's directory; a link with an absolute target
  is refused, wherever it points (as WASI and cap-std refuse it: an absolute target is a
  host path, whose meaning differs between the host and the guest);
- ``..`` at a mount's root would leave the mount on the host, and is refused;
- ``..`` after a file is refused (the kernel answers ``ENOTDIR``);
- more than 40 symlinks (Linux's ``MAXSYMLINKS``) is a loop, and refused;
- a NUL byte, text that is not UTF-8, an empty path, a component longer than 255 bytes or
  a path longer than 4,096 bytes is refused as malformed (the caller's input, not the
  policy, is at fault: :attr:`PathPolicyViolation.malformed`);
- trailing components that do not exist yet are allowed, so that a file can be created,
  but ``..`` after one of them is not (the kernel would fail, and there is nothing to
  resolve it against).

The resolved path must then be inside a granted mount, writable when the caller needs to
write or delete (and its directory not on a read-only file system), and must not be a FIFO,
socket or device (opening one could block or reach outside) nor a regular file with more
than one hard link (a hard link is the same file as one that may lie outside every mount).

A path to *delete* is resolved the same way except for its last component: a symbolic link
there is not followed, since deleting it removes the link itself and touches nothing it
points to (so a link pointing outside can be deleted), and a FIFO, socket or device there
may be deleted too. The result is the canonical guest path, free of symlinks,
``.`` and ``..``: the guest is handed this path, not the original text, so what it opens is
what was checked. If the tree changes between the check and the guest's use, WASI's own
capability check -- every path resolved beneath its preopened directory -- is the second
wall.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from typing import Literal

from ._mounts import GrantedMount, describe_roots

PathNeed = Literal["read", "write", "delete"]

WORKSPACE = "/workspace"
"""Relative guest paths resolve against this guest directory."""
MAX_SYMLINKS = 40
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


class PathPolicyViolation(ValueError):
    """A path leaves the granted mounts, or needs a mode its mount does not grant."""

    def __init__(
        self, reason: str, mounts: tuple[GrantedMount, ...], *, malformed: bool = False
    ) -> None:
        super().__init__(f"{reason}; allowed roots: {describe_roots(mounts)}")
        self.reason = reason
        """What is wrong with the path, without the list of roots."""
        self.mounts = mounts
        """The mounts the path had to stay in."""
        self.malformed = malformed
        """The text itself is no usable path (empty, too long, a NUL byte, not UTF-8)."""


def canonical_guest_path(path: str, mounts: tuple[GrantedMount, ...], need: PathNeed) -> str:
    """Resolve ``path`` like the kernel would; the canonical guest path, or raise.

    Raises :class:`PathPolicyViolation` naming the allowed roots.
    """
    return _Walk(path, mounts).resolve(need)


class _Roots:
    """What a walk needs of a set of mounts, worked out once per set: each mount with its
    guest path's components, and its host directory as text."""

    __slots__ = ("depth", "hosts", "roots")

    def __init__(self, mounts: tuple[GrantedMount, ...]) -> None:
        self.roots = [(m, _parts(m.guest)) for m in mounts]
        self.depth = {m.guest: len(parts) for m, parts in self.roots}
        self.hosts = {m.guest: os.fspath(m.host) for m in mounts}


MAX_KNOWN_ROOTS = 1024
"""Sets of mounts whose :class:`_Roots` are kept (the mount policy hands out the same
tuples call after call; past this many the cache starts again)."""

_known_roots: dict[tuple[GrantedMount, ...], _Roots] = {}
"""Shared by every thread: a lookup that races a reset builds the same value again."""


def _roots_of(mounts: tuple[GrantedMount, ...]) -> _Roots:
    roots = _known_roots.get(mounts)
    if roots is None:
        if len(_known_roots) >= MAX_KNOWN_ROOTS:
            _known_roots.clear()
        roots = _known_roots[mounts] = _Roots(mounts)
    return roots


class _Walk:
    def __init__(self, path: str, mounts: tuple[GrantedMount, ...]) -> None:
        self.path = path
        self.mounts = mounts
        known = _roots_of(mounts)
        self.roots = known.roots
        self.depth = known.depth
        self.hosts = known.hosts
        self.last: os.stat_result | None = None
        """The ``lstat`` of the walk's last component, when the walk ended on one it
        looked at (not a symlink): the file-kind check needs no second look."""

    def fail(self, reason: str, *, malformed: bool = False) -> PathPolicyViolation:
        shown = self.path if len(self.path) <= 200 else self.path[:200] + "..."
        return PathPolicyViolation(f"path {shown!r} {reason}", self.mounts, malformed=malformed)

    def resolve(self, need: PathNeed) -> str:
        path = self.path
        if "\x00" in path:
            raise self.fail("contains a NUL byte", malformed=True)
        ascii = path.isascii()  # then characters are bytes: nothing to encode
        try:
            size = len(path) if ascii else len(path.encode("utf-8"))
        except UnicodeEncodeError:
            raise self.fail("is not valid UTF-8", malformed=True) from None
        if not path:
            raise self.fail("is empty", malformed=True)
        if size > MAX_PATH_BYTES:
            raise self.fail(f"is longer than {MAX_PATH_BYTES} bytes", malformed=True)
        if not path.startswith("/"):
            path = f"{WORKSPACE}/{path}"
        parts = path.split("/")
        if size > MAX_NAME_BYTES and any(
            len(part if ascii else part.encode("utf-8")) > MAX_NAME_BYTES for part in parts
        ):
            raise self.fail(f"has a component longer than {MAX_NAME_BYTES} bytes", malformed=True)
        cur = self.walk(deque(parts), follow_last=need != "delete")
        mount = self.mount_of(cur)
        if mount is None:
            raise self.fail("is not inside a mount")
        canonical = "/" + "/".join(cur)
        if len(canonical) * 4 > MAX_PATH_BYTES and len(canonical.encode("utf-8")) > MAX_PATH_BYTES:
            raise self.fail(f"resolves to more than {MAX_PATH_BYTES} bytes")
        if need != "read":
            if not mount.writable:
                raise self.fail(f"is on {mount.guest}, which is read-only for this tool")
            if canonical == mount.guest:
                raise self.fail(f"is the root of mount {mount.guest}, which cannot be modified")
            self.check_file_system(mount, cur)
        self.check_file_kind(mount, cur, need)
        return canonical

    def walk(self, pending: deque[str], *, follow_last: bool = True) -> list[str]:
        cur: list[str] = []
        links = 0
        missing = False
        in_file = False  # the last resolved component is not a directory
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            self.last = None
            if name == "..":
                if missing:
                    raise self.fail("uses '..' after a component that does not exist")
                if in_file:
                    raise self.fail("uses '..' after a file (not a directory)")
                mount = self.mount_of(cur)
                if mount is not None and len(cur) == self.depth[mount.guest]:
                    raise self.fail(f"climbs out of mount {mount.guest} with '..'")
                if cur:
                    cur.pop()  # '..' at the root stays at the root
                continue
            cur.append(name)
            if missing:
                continue
            mount = self.mount_of(cur)
            if mount is None:
                if self.is_above_a_mount(cur):
                    continue
                raise self.fail("is outside the mounts")
            if len(cur) == self.depth[mount.guest]:
                continue  # a mount's root: its host directory was resolved when granted
            host = self.host_of(mount, cur)
            try:
                info = os.lstat(host)
            except (FileNotFoundError, NotADirectoryError):
                missing = True
                continue
            except OSError as exc:
                raise self.fail(_unresolvable(exc)) from None
            if not stat.S_ISLNK(info.st_mode):
                in_file = not stat.S_ISDIR(info.st_mode)
                self.last = info
                continue
            if not pending and not follow_last:
                break  # the link itself is what the caller acts on
            links += 1
            if links > MAX_SYMLINKS:
                raise self.fail("has too many levels of symbolic links (a loop?)")
            cur.pop()
            target = self.read_link(host)
            if target.startswith("/"):
                raise self.fail(
                    "goes through a symlink with an absolute target; only relative symlinks "
                    "are followed"
                )
            pending.extendleft(reversed(target.split("/")))
        return cur

    def read_link(self, host: str) -> str:
        try:
            target = os.readlink(host)
        except (FileNotFoundError, NotADirectoryError, ValueError):
            raise self.fail("changed while it was being checked") from None
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # no longer a symlink
                raise self.fail("changed while it was being checked") from None
            raise self.fail(_unresolvable(exc)) from None
        try:
            target.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail("goes through a symlink whose target is not UTF-8") from None
        if not target:
            raise self.fail("goes through an empty symlink")
        return target

    def mount_of(self, cur: list[str]) -> GrantedMount | None:
        for mount, guest_parts in self.roots:
            if cur[: len(guest_parts)] == guest_parts:
                return mount
        return None

    def is_above_a_mount(self, cur: list[str]) -> bool:
        return any(len(cur) < len(parts) and parts[: len(cur)] == cur for _, parts in self.roots)

    def host_of(self, mount: GrantedMount, cur: list[str]) -> str:
        inside = cur[self.depth[mount.guest] :]
        host = self.hosts[mount.guest]
        return host + "/" + "/".join(inside) if inside else host

    def check_file_system(self, mount: GrantedMount, cur: list[str]) -> None:
        """Refuse a change in a directory on a read-only file system (the kernel's EROFS,
        which WASI reports as an I/O error): the nearest existing directory is asked."""
        here = cur[:-1]
        while len(here) >= self.depth[mount.guest]:
            try:
                flags = os.statvfs(self.host_of(mount, here)).f_flag
            except (FileNotFoundError, NotADirectoryError):
                here = here[:-1]
                continue
            except OSError:
                return  # the tool will meet and report whatever this is
            if flags & os.ST_RDONLY:
                raise self.fail("is on a read-only file system")
            return

    def check_file_kind(self, mount: GrantedMount, cur: list[str], need: PathNeed) -> None:
        info = self.last
        if info is None:
            try:
                info = os.lstat(self.host_of(mount, cur))
            except OSError:
                return  # does not exist (yet): a create
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            return
        if not stat.S_ISREG(mode):
            if need == "delete":
                return  # removing the entry opens nothing and follows nothing
            if stat.S_ISLNK(mode):
                raise self.fail("changed while it was being checked")
            raise self.fail("is a FIFO, socket or device; only files and directories are allowed")
        if info.st_nlink > 1:
            raise self.fail(
                f"is a file with {info.st_nlink} hard links; hard-linked files are refused "
                "(the other link may be outside the mounts)"
            )


def _parts(guest: str) -> list[str]:
    return [p for p in guest.split("/") if p]


def _unresolvable(exc: OSError) -> str:
    """Why a component could not be looked at on the host, in words (no raw errno text)."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "cannot be resolved: the host denies access to a directory on the way"
    if exc.errno == errno.ENAMETOOLONG:
        return "is too long for the host file system"
    if exc.errno == errno.ELOOP:
        return "has too many levels of symbolic links (a loop?)"
    return f"cannot be resolved on the host ({errno.errorcode.get(exc.errno or 0, 'error')})"
