"""Test guests of ``guests/``, compiled with the build helper and run by a real runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from toolcage.runtime.wasm import ModuleCache, WasmEngine, WasmToolRunner
from toolcage.wasm_tools.build import build_cached

GUESTS = Path(__file__).parent / "guests"


@pytest.fixture(scope="session")
def guest_wasm() -> dict[str, bytes]:
    """Each guest's module by name, from the build cache the session's start filled."""
    sources = sorted(GUESTS.glob("*.c"))
    modules = build_cached(*([source] for source in sources))
    return {
        source.stem: module.read_bytes() for source, module in zip(sources, modules, strict=True)
    }


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
