"""The compile cache loads only what this user's runtime sealed; anything else is rebuilt.

Each case runs a real call through ``Runtime.from_config`` in a child process, so a cache
file that crashes wasmtime fails the test instead of killing the test run.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import wasmtime
from toolcage.runtime.wasm._sealed import cache_key, read_sealed

from .guest_tools import run_script

CALL = textwrap.dedent(
    """
    import anyio, json, pathlib
    from toolcage.runtime import Runtime

    pathlib.Path("workspace/note.txt").write_text("sealed")

    async def main():
        async with Runtime.from_config(None) as runtime:
            result = await runtime.execute("file_read", {"path": "/workspace/note.txt"})
            print(json.dumps(result.envelope()))

    anyio.run(main)
    """
)


def call_file_read(tmp_path: Path) -> dict[str, object]:
    done = run_script(CALL, tmp_path, env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "panicked" not in done.stderr
    envelope: dict[str, object] = json.loads(done.stdout)
    return envelope


def flip(count: int) -> Callable[[bytes], bytes]:
    def damage(data: bytes) -> bytes:
        middle = len(data) // 2
        flipped = bytes(b ^ 0xFF for b in data[middle : middle + count])
        return data[:middle] + flipped + data[middle + count :]

    return damage


def unsealed(data: bytes) -> bytes:
    """A valid serialized module without the seal (what older versions wrote)."""
    engine = wasmtime.Engine()
    return bytes(wasmtime.Module(engine, "(module)").serialize())


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "one flipped byte": flip(1),
    "64 flipped bytes": flip(64),
    "truncated": lambda data: data[: len(data) // 3],
    "empty": lambda data: b"",
    "garbage": lambda data: bytes(range(256)) * 64,
    "unsealed module": unsealed,
}


class TestSealedCache:
    @pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
    def test_a_damaged_cache_file_is_rebuilt_not_loaded(
        self, tmp_path: Path, damage: Callable[[bytes], bytes]
    ) -> None:
        first = call_file_read(tmp_path)
        assert first["result"] == "sealed", first
        cache = tmp_path / "cache" / "toolcage" / "wasm"
        (cached,) = cache.glob("*.cwasm")
        damaged = damage(cached.read_bytes())
        cached.write_bytes(damaged)

        second = call_file_read(tmp_path)

        assert second["result"] == "sealed", second
        key = cache_key(cache)
        assert key is not None
        assert cached.read_bytes() != damaged
        assert read_sealed(cached, key) is not None

    def test_an_intact_cache_file_is_loaded_not_rebuilt(self, tmp_path: Path) -> None:
        call_file_read(tmp_path)
        (cached,) = (tmp_path / "cache" / "toolcage" / "wasm").glob("*.cwasm")
        stamp = cached.stat().st_mtime_ns
        assert call_file_read(tmp_path)["result"] == "sealed"
        assert cached.stat().st_mtime_ns == stamp

    def test_the_key_is_private_to_its_user(self, tmp_path: Path) -> None:
        key = cache_key(tmp_path)
        assert key is not None
        assert (tmp_path / "key").stat().st_mode & 0o077 == 0
        (tmp_path / "key").chmod(0o644)
        assert cache_key(tmp_path) is None  # a key others can read seals nothing
