"""The ``vault`` binding: the host copies a secret file into a guest's mount, unseen.

The vault is a host directory the operator configures (``[state.vault] dir``) and no mount
ever exposes (the runtime refuses a config that mounts it). A guest asks
``toolcage_vault_v1.copy`` with ``{"item": "smtp-password", "path": "/shared/smtp.pw",
"overwrite": false}``; the bytes go from the vault to the mount on the host, and the guest
learns only the outcome: ``{"ok": true, "text": "copied vault item ...", "bytes": N,
"created": true}``, with the ``vault_copyto`` tool's details, display line and artifact.

- ``item`` is a literal name of an entry directly in the vault: no ``/``, no NUL, no
  leading ``.``; it is opened with ``O_NOFOLLOW`` beneath the vault's descriptor, so a
  symbolic link is refused, and only a regular file of at most ``max_bytes`` is copied.
- the call's agent (``agent_id``, from the call) must be granted the item
  (``[state.vault] grants``).
- ``path`` has passed the path policy in ``write`` mode and is a canonical guest path; it
  must be under ``/shared`` or ``/tmp`` on a mount writable for the tool. Its directory is
  reached one component at a time without following links; the bytes go into a new
  temporary file there (``O_EXCL``, mode 0600), are synced, and the file is renamed over
  the target -- or, when it must not replace one, linked to it, which fails if the target
  exists. A failure leaves no temporary file and the target as it was.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import secrets
import stat
from typing import Any

import wasmtime
from toolcage.policies import GrantedMount

from ._abi import failed, module_name
from ._base import CallState
from ._names import shown_name
from ._results import JsonHandler, define_json_calls, presented
from ._state import StateServices

DESTINATIONS = ("/shared", "/tmp")  # noqa: S108 (guest paths)
"""The guest mounts an item may be copied into."""

_ITEM_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR_FLAGS = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class VaultRefusal(Exception):
    """A copy the vault refuses; ``error_type`` and message for the guest."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


class VaultBinding:
    """Capability ``vault``: ``toolcage_vault_v1.copy`` / ``.result``."""

    name = "vault"

    def __init__(self, services: StateServices) -> None:
        self._services = services

    def calls(self) -> dict[str, JsonHandler]:
        """The calls this binding answers, by import name."""
        return {"copy": self.answer}

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_calls(linker, module_name(self.name), self.calls())

    def answer(self, state: CallState, request: dict[str, Any]) -> dict[str, Any]:
        """The copy's message, bytes and whether the file is new; shown as the
        ``vault_copyto`` tool shows it (names in the SDK's form, :mod:`._names`)."""
        try:
            text, size, created = self.copy(state, request)
        except VaultRefusal as exc:
            return failed(exc.error_type, exc.message)
        path = request["path"]
        item, shown = shown_name(request["item"]), shown_name(path)
        details = {"item": item, "path": shown, "bytes": size, "created": created}
        display = f"Copied vault item {item} to {shown} ({size_shown(size)})"
        artifact = ("file", path, "created" if created else "modified")
        return presented(text, details, display, [artifact]) | {"bytes": size, "created": created}

    def copy(self, state: CallState, request: dict[str, Any]) -> tuple[str, int, bool]:
        """Copy the item into the mount; the message saying what was copied where, the bytes
        copied and whether the file is new."""
        item, path = request.get("item"), request.get("path")
        overwrite = request.get("overwrite", False)
        if (
            not isinstance(item, str)
            or not isinstance(path, str)
            or not isinstance(overwrite, bool)
        ):
            raise VaultRefusal("validation_error", "item and path must be strings")
        _check_item(item)
        vault = self._services.vault_dir
        if vault is None:
            raise VaultRefusal(
                "execution_error", "no vault is configured; set [state.vault] dir in the config"
            )
        patterns = self._services.vault.grants.get(state.principal.agent_id, ())
        if not any(fnmatch.fnmatchcase(item, p) for p in patterns):
            raise VaultRefusal(
                "permission_denied",
                f"agent {state.principal.agent_id!r} may not copy vault item {item!r} "
                "([state.vault] grants)",
            )
        mount, parts = _destination(path, state.mounts)
        data = _read_item(vault, item, self._services.vault.max_bytes)
        created = _write_atomically(mount, parts, data, replace=overwrite, shown=path)
        return f"copied vault item {item!r} ({len(data):,} bytes) to {path}", len(data), created


def size_shown(size: int) -> str:
    """A byte count for a person, as the SDK's ``tc_buf_size`` writes it: ``512 B``,
    ``1.2 KB``, ``3.4 MB`` (powers of 1024, tenths rounded half up)."""
    if size < 1024:
        return f"{size} B"
    unit, scale = 1024, 0
    while scale < 3 and size // 1024 >= unit:
        unit *= 1024
        scale += 1
    tenths = size // unit * 10 + (size % unit * 10 + unit // 2) // unit
    return f"{tenths // 10}.{tenths % 10} {'KMGT'[scale]}B"


def _check_item(item: str) -> None:
    if not item or "/" in item or "\0" in item or item.startswith(".") or len(item) > 255:
        raise VaultRefusal(
            "validation_error",
            f"{item!r} is not a vault item name: give the item's literal name (no '/', no "
            "leading '.', at most 255 characters)",
        )
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in item):
        raise VaultRefusal("validation_error", f"{item!r} is not a vault item name")


def _destination(path: str, mounts: tuple[GrantedMount, ...]) -> tuple[GrantedMount, list[str]]:
    """The writable ``/shared`` or ``/tmp`` mount holding ``path``, and the components below it."""
    for mount in mounts:
        if mount.guest in DESTINATIONS and path.startswith(mount.guest + "/"):
            parts = path[len(mount.guest) + 1 :].split("/")
            if any(p in ("", ".", "..") for p in parts):
                break
            if not mount.writable:
                raise VaultRefusal("permission_denied", f"{mount.guest} is read-only for this tool")
            return mount, parts
    raise VaultRefusal(
        "permission_denied",
        f"vault items can only be copied to a file under /shared or /tmp, not {path!r}",
    )


def _read_item(vault: os.PathLike[str] | str, item: str, cap: int) -> bytes:
    try:
        dir_fd = os.open(vault, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise VaultRefusal(
            "execution_error", f"the vault cannot be opened: {exc.strerror}"
        ) from None
    try:
        fd = os.open(item, _ITEM_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            raise VaultRefusal("validation_error", f"the vault has no item {item!r}") from None
        if exc.errno == errno.ELOOP:
            raise VaultRefusal(
                "permission_denied", f"vault item {item!r} is a symbolic link; links are not copied"
            ) from None
        raise VaultRefusal("execution_error", f"vault item {item!r}: {exc.strerror}") from None
    finally:
        os.close(dir_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise VaultRefusal("validation_error", f"vault item {item!r} is not a regular file")
        if info.st_size > cap:
            raise VaultRefusal("execution_error", _too_big(item, info.st_size, cap))
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 20, cap + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:  # it grew while being read
                raise VaultRefusal("execution_error", _too_big(item, total, cap))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_big(item: str, size: int, cap: int) -> str:
    return f"vault item {item!r} is {size:,} bytes; the limit is {cap:,} ([state.vault] max_bytes)"


def _write_atomically(
    mount: GrantedMount, parts: list[str], data: bytes, *, replace: bool, shown: str
) -> bool:
    """Write ``data`` to the file; whether there was none before."""
    try:
        dir_fd = _open_dir(mount, parts[:-1])
    except OSError as exc:
        raise VaultRefusal("execution_error", f"cannot write {shown!r}: {_why(exc)}") from None
    temp, name = f".toolcage-{secrets.token_hex(16)}.tmp", parts[-1]
    try:
        fd = os.open(temp, _TEMP_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            created = not _exists(name, dir_fd)
            os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            return created
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        os.unlink(temp, dir_fd=dir_fd)
        return True
    except OSError as exc:
        with contextlib.suppress(OSError):  # never created, or already renamed
            os.unlink(temp, dir_fd=dir_fd)
        if exc.errno == errno.EEXIST:
            raise VaultRefusal(
                "execution_error", f"{shown!r} already exists (pass overwrite=true to replace it)"
            ) from None
        raise VaultRefusal("execution_error", f"cannot write {shown!r}: {_why(exc)}") from None
    finally:
        os.close(dir_fd)


def _exists(name: str, dir_fd: int) -> bool:
    """Whether ``name`` is in the directory (a link counts; it is not followed)."""
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _open_dir(mount: GrantedMount, parts: list[str]) -> int:
    """A descriptor of the directory ``parts`` below ``mount``, reached without links."""
    fd = os.open(mount.host, _DIR_FLAGS)
    try:
        for name in parts:
            inner = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _why(exc: OSError) -> str:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
        return "its directory does not exist (or is a link)"
    if exc.errno in (errno.EISDIR, errno.ENOTEMPTY):
        return "it is a directory"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the file system is full"
    return exc.strerror or "the host refused"
