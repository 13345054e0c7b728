"""Sealed cache files: compiled modules that are loaded only when this user's runtime wrote them.

wasmtime trusts what it deserializes -- compiled machine code -- and a damaged file makes it
crash the process (one flipped byte panicked it, 64 segfaulted it). So every cache file is
sealed: ``MAGIC``, then a keyed BLAKE2b tag over the entry's name and the serialized module,
then the module. The key is 32 random bytes in the cache directory, readable by its owner
only, made once per user; a file that was damaged, truncated, written by an older format,
renamed to another entry, or forged by anyone who cannot read the key fails the check.

:func:`read_sealed` reads the file once and returns the verified bytes, which the caller
deserializes -- never the path, which could be swapped between check and use.
:func:`write_sealed` writes a temporary file in the same directory and renames it over the
entry, so a reader sees the old file or the new one, never a part.

A compiled *component* is tens of megabytes, and wasmtime maps it from its file in ~3 ms
where it takes ~60 ms to load it from bytes; so :func:`write_sealed_apart` keeps the payload
as the whole of its file and the seal beside it (``NAME.seal``), and
:func:`open_sealed_apart` verifies the file through a descriptor it then hands out: the
caller loads *that* descriptor (``/proc/self/fd/N``), the very inode that was checked.
Writers only ever rename new files into place, so a verified inode never changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import mmap
import os
import secrets
import stat
import tempfile
from importlib.metadata import version
from pathlib import Path

MAGIC = b"toolcage-sealed-module-v1\n"
TAG_BYTES = 32
KEY_BYTES = 32
MAX_FILE_BYTES = 256 << 20
"""A cache file larger than this is not read (no built module comes near it)."""
SEAL_SUFFIX = ".seal"
"""The suffix of a payload's seal file (:func:`write_sealed_apart`)."""


def compiled_name(wasm: bytes, settings: str) -> str:
    """The cache's name for the code compiled from ``wasm``: its SHA-256 with the wasmtime
    version and the engine ``settings`` the compiled code depends on."""
    digest = hashlib.sha256(wasm)
    digest.update(f"{version('wasmtime')}/{settings}".encode())
    return digest.hexdigest()[:40]


def cache_key(directory: Path) -> bytes | None:
    """This user's sealing key for ``directory``, made on first use; ``None`` if unusable.

    A key file that is not a regular file of this user's, readable by nobody else, is not
    used (and then nothing is cached).
    """
    path = directory / "key"
    key = _read_key(path)
    if key is not None:
        return key
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".key-")
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # fails if another process made the key first: use theirs
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError:
        return None
    return _read_key(path)


def _read_key(path: Path) -> bytes | None:
    key = _read_regular(path, KEY_BYTES, private=True)
    return key if key is not None and len(key) == KEY_BYTES else None


def _read_regular(path: Path, max_bytes: int, *, private: bool = False) -> bytes | None:
    """The content of the regular file at ``path`` (not through a symlink), if it holds at
    most ``max_bytes``; with ``private``, only a file of this user's that nobody else can
    read. ``None`` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
            return None
        if private and (info.st_uid != os.getuid() or info.st_mode & 0o077):
            return None
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= max_bytes else None


def _tag(key: bytes, name: str, payload: bytes | bytearray | mmap.mmap) -> bytes:
    mac = hashlib.blake2b(key=key, digest_size=TAG_BYTES)
    mac.update(name.encode() + b"\0")
    mac.update(payload)
    return mac.digest()


def read_sealed(path: Path, key: bytes) -> bytes | None:
    """The verified payload of the sealed file at ``path``; ``None`` if it does not verify."""
    data = _read_regular(path, MAX_FILE_BYTES)
    if data is None:
        return None
    header = len(MAGIC) + TAG_BYTES
    if len(data) <= header or not data.startswith(MAGIC):
        return None
    tag, payload = data[len(MAGIC) : header], data[header:]
    if not hmac.compare_digest(tag, _tag(key, path.name, payload)):
        return None
    return payload


def write_sealed(path: Path, key: bytes, payload: bytes | bytearray) -> None:
    """Seal ``payload`` into ``path``, atomically (see the module docstring)."""
    _write_atomic(path, [MAGIC + _tag(key, path.name, payload), payload])


def write_sealed_apart(path: Path, key: bytes, payload: bytes | bytearray) -> None:
    """``payload`` as the whole file ``path`` and its seal as ``path`` + :data:`SEAL_SUFFIX`,
    each written atomically, the payload first (see the module docstring)."""
    _write_atomic(path, [payload])
    _write_atomic(_seal_of(path), [MAGIC + _tag(key, path.name, payload)])


def open_sealed_apart(path: Path, key: bytes) -> int | None:
    """A read-only descriptor of the regular file ``path`` whose content its seal verifies
    (the caller closes it); ``None`` if it does not verify."""
    seal = _read_regular(_seal_of(path), len(MAGIC) + TAG_BYTES)
    if seal is None or not seal.startswith(MAGIC):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not 0 < info.st_size <= MAX_FILE_BYTES:
            os.close(fd)
            return None
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as mapped:
            tag = _tag(key, path.name, mapped)
    except BaseException:
        os.close(fd)
        raise
    if not hmac.compare_digest(seal[len(MAGIC) :], tag):
        os.close(fd)
        return None
    return fd


def _seal_of(path: Path) -> Path:
    return path.with_name(path.name + SEAL_SUFFIX)


def _write_atomic(path: Path, parts: list[bytes | bytearray]) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".module-")
    try:
        with os.fdopen(fd, "wb") as file:
            for part in parts:
                file.write(part)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
