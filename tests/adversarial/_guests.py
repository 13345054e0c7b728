"""The test guests of ``guests/``, compiled with the build helper and run by raw wasmtime."""

from __future__ import annotations

from pathlib import Path

import wasmtime
from toolcage.wasm_tools.build import build_cached

GUESTS = Path(__file__).parent / "guests"


def build_guest(name: str) -> Path:
    """``guests/NAME.c`` as a WASI preview-1 command, from the per-user build cache.

    The session's start (``tests/conftest.py``) has built it already, outside any test's
    timeout; this finds it by the hash of its source.
    """
    (module,) = build_cached([GUESTS / f"{name}.c"])
    return module


class GuestRunner:
    """One engine and compiled module; a fresh store and WASI context per run."""

    def __init__(self, module_path: Path) -> None:
        self.engine = wasmtime.Engine()
        self.module = wasmtime.Module.from_file(self.engine, str(module_path))
        self.linker = wasmtime.Linker(self.engine)
        self.linker.define_wasi()

    def run(self, argv: list[str], preopens: list[tuple[Path, str, bool]], stdout: Path) -> int:
        """Run with ``(host, guest, writable)`` preopens; the exit code."""
        store = wasmtime.Store(self.engine)
        wasi = wasmtime.WasiConfig()
        wasi.argv = argv
        for host, guest, writable in preopens:
            wasi.preopen_dir(str(host), guest, writable)
        wasi.stdout_file = str(stdout)
        store.set_wasi(wasi)
        start = self.linker.instantiate(store, self.module).exports(store)["_start"]
        assert isinstance(start, wasmtime.Func)
        try:
            start(store)
        except wasmtime.ExitTrap as exc:
            return exc.code
        return 0
