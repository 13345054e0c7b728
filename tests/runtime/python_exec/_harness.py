"""Runs the built ``python_exec.wasm`` straight from wasmtime-py: a minimal, test-only host.

It does what the contract asks of the host and nothing more: a fresh store and instance
per call, WASI streams whose callbacks accept everything, ``/workspace`` preopened, a
64 MiB wasm stack (with the larger async stack wasmtime requires), a guest thread with a
96 MiB native stack, and an epoch deadline. The runtime's ``python_exec`` tool replaces it
for real callers.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import wasmtime
from toolcage.wasm_tools.build import cache_root
from wasmtime import _ffi
from wasmtime.component import Component, Linker

WASM_STACK = 64 << 20
THREAD_STACK = 96 << 20
MEMORY = 256 << 20
TICK = 0.01
"""Seconds per epoch tick."""


@dataclass(frozen=True)
class Outcome:
    """What one call gave."""

    stdout: str
    stderr: str
    value: str | None = None
    """The repr of the final expression (ok(some))."""
    error: str | None = None
    """The traceback text (err)."""


class Collected:
    """A WASI output callback that keeps everything."""

    def __init__(self) -> None:
        self.data = bytearray()

    def __call__(self, chunk: bytes) -> int:
        self.data += chunk
        return len(chunk)


class Guest:
    """The component, compiled once (kept serialized in the user's cache), run per call."""

    def __init__(self, wasm: Path, cache: Path | None = None) -> None:
        """``cache``: where the compiled component is kept (``~/.cache/toolcage/tests``)."""
        config = wasmtime.Config()
        _ffi.wasmtime_config_async_stack_size_set(config.ptr(), WASM_STACK + (1 << 20))
        config.max_wasm_stack = WASM_STACK
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()
        digest = hashlib.sha256(wasm.read_bytes()).hexdigest()[:24]
        settings = f"{version('wasmtime')}-epoch-stack{WASM_STACK >> 20}m"
        folder = cache_root() / "tests" if cache is None else cache
        compiled = folder / f"python_exec-{digest}-{settings}.cwasm"
        if not compiled.is_file():
            compiled.parent.mkdir(parents=True, exist_ok=True)
            serialized = Component.from_file(self.engine, str(wasm)).serialize()
            partial = compiled.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(serialized)
            partial.replace(compiled)
            kept = sorted(compiled.parent.glob("python_exec-*.cwasm"), key=os.path.getmtime)
            for stale in kept[:-4]:  # some 60 MB each
                stale.unlink(missing_ok=True)
        self.component = Component.deserialize_file(self.engine, str(compiled))
        self.linker = Linker(self.engine)
        self.linker.add_wasip2()

    def _tick(self) -> None:
        while not self._stop.wait(TICK):
            self.engine.increment_epoch()

    def close(self) -> None:
        """Stop the epoch ticker."""
        self._stop.set()
        self._ticker.join()

    def run(self, code: str, workspace: Path | None = None, *, deadline: float = 60.0) -> Outcome:
        """Run ``code`` in a fresh instance, on a thread with a large stack; a trap (the
        deadline's among them) is raised as ``wasmtime.WasmtimeError``."""
        result: list[Outcome | BaseException] = []

        def target() -> None:
            try:
                result.append(self._call(code, workspace, deadline))
            except BaseException as exc:  # handed to the caller
                result.append(exc)

        previous = threading.stack_size(THREAD_STACK)
        try:
            thread = threading.Thread(target=target)
            thread.start()
        finally:
            threading.stack_size(previous)
        thread.join()
        (outcome,) = result
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def _call(self, code: str, workspace: Path | None, deadline: float) -> Outcome:
        store = wasmtime.Store(self.engine)
        store.set_limits(memory_size=MEMORY)
        store.set_epoch_deadline(max(1, round(deadline / TICK)))
        wasi = wasmtime.WasiConfig()
        wasi.argv = ["python"]
        out, err = Collected(), Collected()
        wasi.stdout_custom = out
        wasi.stderr_custom = err
        if workspace is not None:
            wasi.preopen_dir(str(workspace), "/workspace")
        store.set_wasi(wasi)
        try:
            instance = self.linker.instantiate(store, self.component)
            run = instance.get_func(store, "run")
            assert run is not None
            result = run(store, code)
        finally:
            store.close()
        stdout, stderr = out.data.decode(), err.data.decode()
        if result.tag == "ok":
            return Outcome(stdout, stderr, value=result.payload)
        return Outcome(stdout, stderr, error=result.payload)
