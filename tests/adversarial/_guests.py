"""Building and running the test guests of ``guests/`` with the pinned zig and raw wasmtime."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import wasmtime

GUESTS = Path(__file__).parent / "guests"


def build_guest(name: str, out_dir: Path) -> Path:
    """Compile ``guests/NAME.c`` to a WASI preview-1 command (zig's cache makes reruns fast)."""
    source = GUESTS / f"{name}.c"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    out = out_dir / f"{name}-{digest}.wasm"
    command = [sys.executable, "-m", "ziglang", "cc", "--target=wasm32-wasi", "-O2", "-s"]
    done = subprocess.run(
        [*command, "-o", str(out), str(source)], capture_output=True, text=True, timeout=110
    )
    assert done.returncode == 0, done.stderr
    return out


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
