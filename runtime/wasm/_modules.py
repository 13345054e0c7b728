"""Finding the built guest modules and compiling each once, with an on-disk cache.

Modules ship as package data of ``toolcage.wasm_tools`` (``modules/NAME.wasm``, built by
``make wasm``) and are read with :mod:`importlib.resources`. In a source checkout a module
older than its sources is *stale* and refused, so a forgotten rebuild is a clear error
rather than old behaviour. Its sources are those the build names
(:func:`toolcage.wasm_tools.build.tool_inputs`): ``tools/NAME.c`` (``relay/relay.c`` for
the shared relay guest), the files of
``tools/NAME/``, the SDK and the directories of the libraries it links (a few dozen
``stat`` calls, made each time a module is first read by an engine).

Compiling with Cranelift takes tens of milliseconds per module; loading a serialized one is
about a hundred times cheaper. Compiled modules are cached under
``$XDG_CACHE_HOME/toolcage/wasm`` (``~/.cache/toolcage/wasm``) keyed by the module's hash,
the wasmtime version and the engine settings. wasmtime trusts what it deserializes, so each
cache file is sealed with a per-user key (:mod:`._sealed`) and only verified bytes are
deserialized: a file that does not verify is recompiled and rewritten, never loaded.
"""

from __future__ import annotations

import contextlib
import os
import threading
from importlib import resources
from pathlib import Path

import wasmtime

from .._errors import UsageError
from ._sealed import cache_key, compiled_name, read_sealed, write_sealed

BUILD_HINT = "run `make wasm` (python -m toolcage.wasm_tools.build)"


class ModuleMissingError(UsageError):
    """A guest module is not built, or older than its source."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/toolcage/wasm``, else ``~/.cache/toolcage/wasm``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolcage" / "wasm"


def module_bytes(name: str) -> bytes:
    """The built module of tool ``name`` from the package data; refuses missing or stale."""
    package = resources.files("toolcage.wasm_tools")
    wasm = package.joinpath("modules", f"{name}.wasm")
    if not wasm.is_file():
        raise ModuleMissingError(f"WASM module {name}.wasm is not built; {BUILD_HINT}")
    # Only a source checkout holds the guests' C files (a wheel ships none but the SDK's),
    # so an installed toolcage never imports the build.
    if isinstance(wasm, Path) and package.joinpath("relay", "relay.c").is_file():
        from toolcage.wasm_tools.build import is_stale, source_of, tool_inputs

        source = source_of(name)
        if source.is_file() and is_stale(wasm, tool_inputs(source, whole_libraries=False)):
            raise ModuleMissingError(
                f"WASM module {name}.wasm is older than its source; {BUILD_HINT}"
            )
    return wasm.read_bytes()


class ModuleCache:
    """Compiled modules of one engine, each compiled (or deserialized) once."""

    def __init__(
        self, engine: wasmtime.Engine, cache_dir: Path | None = None, *, settings: str = ""
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._dir = default_cache_dir() if cache_dir is None else cache_dir
        self._modules: dict[str, wasmtime.Module] = {}
        self._paths: dict[str, Path] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> wasmtime.Module:
        """The compiled module of tool ``name``."""
        module = self._modules.get(name)
        if module is None:
            with self._lock:
                module = self._modules.get(name)
                if module is None:
                    path = self._paths.get(name)
                    wasm = module_bytes(name) if path is None else path.read_bytes()
                    module = self.compile(wasm)
                    self._modules[name] = module
        return module

    def register_path(self, name: str, path: Path) -> None:
        """Take the module of tool ``name`` from the file ``path`` (compiled on first
        :meth:`get`) rather than from the package data."""
        with self._lock:
            self._paths[name] = path

    def add(self, name: str, wasm: bytes) -> wasmtime.Module:
        """Compile ``wasm`` as the module of ``name`` (tools that are not package data)."""
        module = self.compile(wasm)
        with self._lock:
            self._modules[name] = module
        return module

    def compile(self, wasm: bytes) -> wasmtime.Module:
        """Compile ``wasm``, through the on-disk cache when it is usable."""
        cached = self._dir / f"{compiled_name(wasm, self._settings)}.cwasm"
        key = cache_key(self._dir)
        payload = None if key is None else read_sealed(cached, key)
        if payload is not None:
            try:
                return wasmtime.Module.deserialize(self._engine, payload)
            except wasmtime.WasmtimeError:
                pass  # verified, yet refused (another wasmtime build): recompile
        module = wasmtime.Module(self._engine, wasm)
        if key is not None:
            # A read-only home only costs the compile next time.
            with contextlib.suppress(OSError):
                write_sealed(cached, key, module.serialize())
        return module

    def close(self) -> None:
        """Free the compiled modules (their engine is being released)."""
        with self._lock:
            modules, self._modules = list(self._modules.values()), {}
        for module in modules:
            module.close()
