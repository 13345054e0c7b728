"""Finding WebAssembly components and compiling each once, with a sealed on-disk cache.

The bundled ``python_exec`` component ships as package data of ``toolcage.wasm_tools``
(``modules/python_exec.wasm``, built by ``make wasm``), found with :mod:`importlib.resources`
as the C guests' modules are; an operator's own build is a file named by the config.

Compiling the ~40 MB CPython component with Cranelift takes ~6 s; so it happens once per
engine (concurrent first calls wait for the one compile, in their guest threads -- never on
the event loop), and the compiled code is cached on disk beside the modules' cache, keyed by
the component's SHA-256, the wasmtime version and the engine settings. The cached file is
the serialized component alone, sealed by a file beside it (:func:`._sealed.write_sealed_apart`),
so that wasmtime maps it from a verified descriptor (~3 ms for 58 MB) instead of copying it
(~60 ms); a file that does not verify is recompiled and rewritten, never loaded.
"""

from __future__ import annotations

import contextlib
import os
import threading
from importlib import resources
from pathlib import Path

import wasmtime
from wasmtime.component import Component

from ._modules import BUILD_HINT, ModuleMissingError, default_cache_dir
from ._sealed import cache_key, compiled_name, open_sealed_apart, write_sealed_apart

PYTHON_EXEC = "python_exec"
"""The bundled component's name (``modules/python_exec.wasm``)."""


def bundled_component(name: str = PYTHON_EXEC) -> Path:
    """The file of the bundled component ``name``; :class:`ModuleMissingError` if not built."""
    wasm = resources.files("toolcage.wasm_tools").joinpath("modules", f"{name}.wasm")
    if not isinstance(wasm, Path) or not wasm.is_file():
        raise ModuleMissingError(f"WASM component {name}.wasm is not built; {BUILD_HINT}")
    return wasm


class ComponentCache:
    """Compiled components of one engine, by file, each compiled (or loaded) once."""

    def __init__(
        self, engine: wasmtime.Engine, cache_dir: Path | None = None, *, settings: str = ""
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._dir = default_cache_dir() if cache_dir is None else cache_dir
        self._components: dict[Path, Component] = {}
        self._locks: dict[Path, threading.Lock] = {}
        self._lock = threading.Lock()

    def compiled(self, path: Path) -> Component | None:
        """The compiled component of ``path`` if it is compiled already (never blocks)."""
        return self._components.get(path)

    def get(self, path: Path) -> Component:
        """The compiled component of the file ``path`` (blocks for a first compile)."""
        component = self._components.get(path)
        if component is not None:
            return component
        with self._lock:
            lock = self._locks.setdefault(path, threading.Lock())
        with lock:
            component = self._components.get(path)
            if component is None:
                try:
                    wasm = path.read_bytes()
                except OSError as exc:
                    raise ModuleMissingError(f"WASM component {path}: {exc.strerror}") from exc
                component = self.compile(wasm)
                with self._lock:
                    self._components[path] = component
        return component

    def compile(self, wasm: bytes) -> Component:
        """Compile ``wasm``, through the on-disk cache when it is usable."""
        cached = self._dir / f"{compiled_name(wasm, self._settings)}.component.cwasm"
        key = cache_key(self._dir)
        fd = None if key is None else open_sealed_apart(cached, key)
        if fd is not None:
            try:
                # The verified descriptor itself, not the path (see _sealed).
                return Component.deserialize_file(self._engine, f"/proc/self/fd/{fd}")
            except wasmtime.WasmtimeError:
                pass  # verified, yet refused (another wasmtime build): recompile
            finally:
                os.close(fd)
        component = Component(self._engine, wasm)
        if key is not None:
            # A read-only home only costs the compile next time.
            with contextlib.suppress(OSError):
                write_sealed_apart(cached, key, component.serialize())
        return component

    def close(self) -> None:
        """Free the compiled components (their engine is being released)."""
        with self._lock:
            components, self._components = list(self._components.values()), {}
        for component in components:
            component.close()
