"""Atomic replacement of the file a guest tool changes.

A tool that changes a file (``file_write``, ``file_edit``, ``attachment_save``) declares it
with ``"replaces"`` in its ``NAME.json``::

    "replaces": {"path": "path", "no_replace_when": {"mode": "create"}}

``path`` names the argument holding the file; ``no_replace_when`` lists argument values
(the schema's default stands for a missing argument) with which an existing file must
never be replaced.

Such a tool never opens its target for writing. Per call the host picks a temporary name
no one can predict (``.toolcage-`` and 32 hex digits from :mod:`secrets`), opens the
target's directory beneath the mount's host directory one component at a time without
following symbolic links, and creates the empty file in it exclusively through that
descriptor, which it keeps until the call ends. The arguments document names the file
(``_temp``) and says the host made it (``_temp_made``); the guest opens it by name (a
regular file with one link, still empty: anything else is refused), writes the whole new
content into it (for an append, the old content first), syncs it and reports success. Then,
and only then, the host commits: it opens the target's directory again the same way, checks
that it is the directory the file was made in and that the file is the one made, gives the
file the permission bits of the file it replaces, and renames it over the target
(``renameat``, or ``renameat2`` with ``RENAME_NOREPLACE`` when the file must not be
replaced). The rename replaces whatever entry has the target's name: a symbolic link or a
hard link is replaced, never written through. A directory swapped for another while the
tool ran fails the call ("moved, removed or replaced"), and the temporary file is removed
through the descriptor it was made under, wherever its directory is now. Missing
directories are made by the host too, the same way, when the declaration's
``parents_when`` matches the arguments (``{"create_parents": true}``). When the file cannot
be made, the guest is told why (``_temp_error``: the errno's name, ``ENOENT`` for a missing
directory) and reports it as it would its own error; the guest never creates a temporary
file, so none can land in a directory the host holds no descriptor of.

:meth:`Replacement.commit` is synchronous and is called in the task that awaited the
guest, right after the guest returned, with no ``await`` in between; a deadline or a
cancellation reaches that task either before the commit (the old content stays and the call
ends with the timeout or cancellation) or after it (the new content is there and the call
succeeded). On every other way out -- an error from the guest, a trap, a timeout, a
cancellation, a failed commit -- :meth:`Replacement.discard` removes the temporary file.
A host killed outright can leave a temporary file behind, never a partial target.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from toolcage.policies import GrantedMount

from .._errors import PermissionDeniedError, ToolError, ToolExecutionError

TEMP_PREFIX = ".toolcage-"
"""Temporary files are named this, then 32 hex digits, then ``.tmp``."""

_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_RENAME_NOREPLACE = 1


@dataclass(frozen=True, slots=True)
class ReplaceSpec:
    """A tool's ``"replaces"`` declaration."""

    path: str
    """The argument that names the file the tool replaces."""
    no_replace_when: Mapping[str, object] = field(default_factory=dict)
    """Argument values with which an existing file is kept."""
    defaults: Mapping[str, object] = field(default_factory=dict)
    """The schema's defaults of the arguments in ``no_replace_when`` and ``parents_when``."""
    parents_when: Mapping[str, object] = field(default_factory=dict)
    """Argument values with which the host makes the target's missing directories."""

    @classmethod
    def from_json(cls, raw: object, parameters: Mapping[str, Any]) -> ReplaceSpec:
        """Parse the declaration; ``parameters`` (the tool's JSON Schema) gives defaults."""
        if not isinstance(raw, dict) or not isinstance(raw.get("path"), str):
            raise ValueError('"replaces" must be an object naming the path argument')
        keep, parents = raw.get("no_replace_when", {}), raw.get("parents_when", {})
        if not isinstance(keep, dict) or not isinstance(parents, dict):
            raise ValueError('"replaces.no_replace_when" and ".parents_when" must be objects')
        properties = parameters.get("properties", {})
        for name in (raw["path"], *keep, *parents):
            if name not in properties:
                raise ValueError(f'"replaces" names {name!r}, which is not a parameter')
        defaults = {name: properties[name].get("default") for name in (*keep, *parents)}
        return cls(
            raw["path"],
            MappingProxyType(dict(keep)),
            MappingProxyType(defaults),
            MappingProxyType(dict(parents)),
        )

    def prepare(self, args: Mapping[str, Any], mounts: Sequence[GrantedMount]) -> Replacement:
        """The replacement for one call with (checked) ``args``; a new temporary name."""
        mount, parts = _locate(args.get(self.path), mounts, self.path)
        replace = not self._matches(self.no_replace_when, args)
        return Replacement(mount, parts, replace=replace, parents=self._matches_all(args))

    def _matches(self, values: Mapping[str, object], args: Mapping[str, Any]) -> bool:
        return any(args.get(k, self.defaults.get(k)) == v for k, v in values.items())

    def _matches_all(self, args: Mapping[str, Any]) -> bool:
        return bool(self.parents_when) and all(
            args.get(k, self.defaults.get(k)) == v for k, v in self.parents_when.items()
        )


class Replacement:
    """One call's temporary file and its commit (see the module docstring)."""

    def __init__(
        self, mount: GrantedMount, parts: tuple[str, ...], *, replace: bool, parents: bool = False
    ) -> None:
        self.path = "/".join((mount.guest, *parts))
        """The target's guest path, for messages."""
        self.temp = f"{TEMP_PREFIX}{secrets.token_hex(16)}.tmp"
        """The temporary file's name, in the target's directory."""
        self._mount = mount
        self._dir = parts[:-1]
        self._name = parts[-1]
        self._replace = replace
        self._parents = parents
        self._done = False
        self._dir_fd = -1
        """The target's directory when :meth:`create` made the temporary file in it."""
        self._made: os.stat_result | None = None

    def create(self) -> dict[str, object]:
        """Make the temporary file (empty) in the target's directory -- and that directory
        first, when the spec's ``parents_when`` matched -- through a descriptor of the
        directory kept until :meth:`discard`; the arguments that tell the guest: the
        file's name, and that it was made or the error (its name) why not."""
        try:
            dir_fd = _open_dir(self._mount, self._dir, make=self._parents)
        except OSError as exc:
            return {"_temp": self.temp, "_temp_error": _errno_name(exc)}
        try:
            fd = os.open(self.temp, _TEMP_FLAGS, 0o666, dir_fd=dir_fd)
        except OSError as exc:
            os.close(dir_fd)
            return {"_temp": self.temp, "_temp_error": _errno_name(exc)}
        self._dir_fd = dir_fd
        try:
            self._made = os.fstat(fd)
        finally:
            os.close(fd)
        return {"_temp": self.temp, "_temp_made": True}

    def commit(self) -> None:
        """Rename the temporary file over the target, or raise the :class:`ToolError`."""
        try:
            dir_fd = _open_dir(self._mount, self._dir)
        except OSError as exc:
            raise _error(exc, self.path, opening=True) from None
        try:
            if self._made is not None:
                self._check_made(dir_fd, self._made)
            _keep_mode(dir_fd, self.temp, self._name)
            if self._replace:
                os.rename(self.temp, self._name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:
                _rename_noreplace(dir_fd, self.temp, self._name)
            self._done = True
        except OSError as exc:
            raise _error(exc, self.path, opening=False) from None
        finally:
            os.close(dir_fd)

    def _check_made(self, dir_fd: int, made: os.stat_result) -> None:
        """The directory now at the target's path must be the one the temporary file was
        made in, and the file the one made (ENOENT: moved or replaced meanwhile)."""
        try:
            found = os.stat(self.temp, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            found = None
        here = os.path.samestat(os.fstat(dir_fd), os.fstat(self._dir_fd))
        if not here or found is None or (found.st_ino, found.st_dev) != (made.st_ino, made.st_dev):
            raise FileNotFoundError(errno.ENOENT, "the directory changed while the tool ran")

    def discard(self) -> None:
        """Remove the temporary file unless it was committed (best effort, never raises):
        through the directory it was made in, wherever that directory is now."""
        dir_fd, self._dir_fd = self._dir_fd, -1
        if self._done:
            if dir_fd >= 0:
                os.close(dir_fd)
            return
        self._done = True
        if dir_fd < 0:  # the guest made it: in the directory now at the path, if anywhere
            try:
                dir_fd = _open_dir(self._mount, self._dir)
            except OSError:
                return
        try:
            os.unlink(self.temp, dir_fd=dir_fd)
        except OSError:
            pass  # never created, or the directory changed; nothing of ours to remove
        finally:
            os.close(dir_fd)


def _locate(
    path: object, mounts: Sequence[GrantedMount], arg: str
) -> tuple[GrantedMount, tuple[str, ...]]:
    """The writable mount holding canonical guest ``path`` and the components below it."""
    for mount in mounts:
        if isinstance(path, str) and path.startswith(mount.guest + "/") and mount.writable:
            parts = tuple(path[len(mount.guest) + 1 :].split("/"))
            if all(p not in ("", ".", "..") for p in parts):
                return mount, parts
    raise PermissionDeniedError(f"{arg} {path!r} is not a file on a writable mount", field=arg)


def _open_dir(mount: GrantedMount, parts: Sequence[str], *, make: bool = False) -> int:
    """A descriptor of the directory ``parts`` below ``mount``, reached without symlinks;
    ``make``: its missing components made (as the guest's ``mkdir`` would)."""
    fd = os.open(mount.host, _DIR_FLAGS)
    try:
        for name in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
            inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _errno_name(exc: OSError) -> str:
    """The name of ``exc``'s errno (``EIO`` for none), which the guest maps to its own."""
    return errno.errorcode.get(exc.errno or errno.EIO, "EIO")


def _keep_mode(dir_fd: int, temp: str, name: str) -> None:
    """Give ``temp`` the permission bits (and, where allowed, the owner) of the regular file
    ``name`` it is to replace. Two ``stat`` calls when they already agree, as they mostly do."""
    try:
        old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(old.st_mode):
        return
    new = os.stat(temp, dir_fd=dir_fd, follow_symlinks=False)
    mode = stat.S_IMODE(old.st_mode) & 0o777  # never set-id bits on new content
    owner = (old.st_uid, old.st_gid)
    if stat.S_IMODE(new.st_mode) == mode and (new.st_uid, new.st_gid) == owner:
        return
    fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if (new.st_uid, new.st_gid) != owner:
            # Only root may give a file away; otherwise the new content is the caller's.
            with contextlib.suppress(PermissionError):
                os.fchown(fd, *owner)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)


def _rename_noreplace(dir_fd: int, temp: str, name: str) -> None:
    """Rename ``temp`` to ``name`` unless ``name`` exists (``EEXIST`` then)."""
    if _renameat2 is not None:
        result = _renameat2(dir_fd, os.fsencode(temp), dir_fd, os.fsencode(name), _RENAME_NOREPLACE)
        if result == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS):
            raise OSError(err, os.strerror(err))
    # No RENAME_NOREPLACE here: a hard link is created only if the name is free.
    os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    os.unlink(temp, dir_fd=dir_fd)


def _error(exc: OSError, path: str, *, opening: bool) -> ToolError:
    """The error of a failed commit; the file was not changed."""
    kept = "; the file was left as it was"
    code = exc.errno
    shown = repr(path)  # as the path policy shows paths: control characters escaped
    if code == errno.EEXIST:
        return ToolExecutionError(f"{shown} already exists; it was not replaced")
    if code in (errno.EISDIR, errno.ENOTEMPTY):
        return ToolExecutionError(f"cannot write {shown}: it is a directory{kept}")
    if code == errno.EROFS:
        return PermissionDeniedError(f"cannot write {shown}: it is on a read-only file system")
    if code in (errno.ENOSPC, errno.EDQUOT):
        return ToolExecutionError(f"cannot write {shown}: the file system is full{kept}")
    if code in (errno.EACCES, errno.EPERM):
        return PermissionDeniedError(f"cannot write {shown}: permission denied{kept}")
    if opening or code in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
        return ToolExecutionError(
            f"cannot write {shown}: its directory was moved, removed or replaced while the "
            f"tool ran{kept}"
        )
    name = errno.errorcode.get(code or 0, "error")
    return ToolExecutionError(f"cannot write {shown}: the host refused ({name}){kept}")
