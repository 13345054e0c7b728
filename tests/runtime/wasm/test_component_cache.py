"""The component cache: the serialized component as a whole file, its seal beside it, loaded
only through a descriptor whose content verified; anything else is compiled again, once.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from toolcage.runtime.wasm import WasmEngine, default_cache_dir
from toolcage.runtime.wasm._component_engine import COMPONENTS
from toolcage.runtime.wasm._components import ComponentCache, bundled_component
from toolcage.runtime.wasm._python_exec import MEMORY_BYTES
from toolcage.runtime.wasm._sealed import (
    SEAL_SUFFIX,
    cache_key,
    open_sealed_apart,
    write_sealed_apart,
)
from wasmtime.component import Component

PAYLOAD = b"\x7fELF" + bytes(range(256)) * 64


def opened(path: Path, key: bytes) -> bytes | None:
    """The content :func:`open_sealed_apart` vouches for, or None."""
    fd = open_sealed_apart(path, key)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as file:
        return file.read()


class TestSealedApart:
    def test_a_sealed_file_opens_to_its_content(self, tmp_path: Path) -> None:
        key = cache_key(tmp_path)
        assert key is not None
        write_sealed_apart(tmp_path / "a.cwasm", key, PAYLOAD)
        assert (tmp_path / "a.cwasm").read_bytes() == PAYLOAD  # whole, for wasmtime to map
        assert opened(tmp_path / "a.cwasm", key) == PAYLOAD

    @pytest.mark.parametrize("damage", ["flipped", "truncated", "no-seal", "renamed", "symlink"])
    def test_anything_else_does_not_open(self, tmp_path: Path, damage: str) -> None:
        key = cache_key(tmp_path)
        assert key is not None
        path = tmp_path / "a.cwasm"
        write_sealed_apart(path, key, PAYLOAD)
        if damage == "flipped":
            data = bytearray(PAYLOAD)
            data[100] ^= 1
            path.write_bytes(bytes(data))
        elif damage == "truncated":
            path.write_bytes(PAYLOAD[:-1])
        elif damage == "no-seal":
            (tmp_path / f"a.cwasm{SEAL_SUFFIX}").unlink()
        elif damage == "renamed":  # another entry's seal over the same bytes
            write_sealed_apart(tmp_path / "b.cwasm", key, PAYLOAD)
            (tmp_path / f"b.cwasm{SEAL_SUFFIX}").replace(tmp_path / f"a.cwasm{SEAL_SUFFIX}")
        else:
            target = tmp_path / "elsewhere"
            path.rename(target)
            path.symlink_to(target)
        assert opened(path, key) is None

    def test_another_users_key_does_not_open_it(self, tmp_path: Path) -> None:
        key = cache_key(tmp_path)
        assert key is not None
        write_sealed_apart(tmp_path / "a.cwasm", key, PAYLOAD)
        assert opened(tmp_path / "a.cwasm", bytes(32)) is None


@pytest.mark.usefixtures("python_exec_compiled")
class TestComponentCache:
    def test_a_damaged_entry_is_compiled_again_once_for_concurrent_callers(
        self, tmp_path: Path
    ) -> None:
        """A copy of the shared cache with one byte flipped: two threads ask at once, one
        compile answers both, and the entry is rewritten so that it verifies again."""
        with WasmEngine(max_memory_bytes=MEMORY_BYTES, profile=COMPONENTS) as engine:
            shared = ComponentCache(engine.engine, default_cache_dir(), settings=engine.settings)
            shared.get(bundled_component())  # from the shared cache: the entry exists
            entries = list(default_cache_dir().glob("*.component.cwasm"))
            assert entries
            cache = tmp_path / "cache"
            cache.mkdir(mode=0o700)
            for entry in entries:
                shutil.copy(entry, cache / entry.name)
                shutil.copy(entry.with_name(entry.name + SEAL_SUFFIX), cache)
            shutil.copy(default_cache_dir() / "key", cache / "key")
            for entry in cache.glob("*.component.cwasm"):
                with entry.open("r+b") as file:
                    file.seek(4096)
                    byte = file.read(1)
                    file.seek(4096)
                    file.write(bytes([byte[0] ^ 0xFF]))
            damaged = ComponentCache(engine.engine, cache, settings=engine.settings)
            got: list[Component] = []
            threads = [
                threading.Thread(target=lambda: got.append(damaged.get(bundled_component())))
                for _ in range(2)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert len(got) == 2
            assert got[0] is got[1]
            key = cache_key(cache)
            assert key is not None
            assert any(opened(entry, key) is not None for entry in cache.glob("*.cwasm"))
            damaged.close()
            shared.close()
