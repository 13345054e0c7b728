"""Test guests of ``guests/``, compiled with the build helper and run by a real runner."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolcage.runtime.wasm import ModuleCache, WasmEngine, WasmToolRunner
from toolcage.wasm_tools.build import compile_guest

GUESTS = Path(__file__).parent / "guests"


@pytest.fixture(scope="session")
def guest_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("guests")


@pytest.fixture(scope="session")
def guest_wasm(guest_dir: Path) -> dict[str, bytes]:
    built: dict[str, bytes] = {}
    for source in sorted(GUESTS.glob("*.c")):
        digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
        out = compile_guest([source], guest_dir / f"{source.stem}-{digest}.wasm")
        built[source.stem] = out.read_bytes()
    return built


@pytest.fixture
def runner(guest_wasm: dict[str, bytes], tmp_path: Path) -> Iterator[WasmToolRunner]:
    """A runner whose module cache knows the test guests (compiled, cached under tmp)."""
    with WasmEngine() as engine:
        runner = WasmToolRunner(
            engine, ModuleCache(engine.engine, tmp_path / "cache", settings=engine.settings)
        )
        for name, wasm in guest_wasm.items():
            runner.modules.add(name, wasm)
        yield runner
