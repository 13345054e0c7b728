"""The WASM runner: WASI guest tools in wasmtime, under the limits and mounts of their policy.

- :mod:`._engine` -- one engine per runtime, epoch interruption and its ticker, made on
  first use and released (its guests stopped) on close;
- :mod:`._modules` -- built modules from the package data, compiled once, cached on disk
  in files sealed with a per-user key (:mod:`._sealed`);
- :mod:`._runner` -- a fresh store and instance per call, WASI from the granted mounts;
- :mod:`._link` -- linking a module with WASI and only its granted host bindings;
- :mod:`._control` -- stopping a guest at its deadline or on cancellation;
- :mod:`._outcome` -- how a guest ended, mapped onto the error envelope in one place;
- :mod:`._spec`, :mod:`._tool` and :mod:`._loader` -- guests as tools, discovered from their
  declarations;
- :mod:`._component_engine`, :mod:`._components`, :mod:`._component_runner` -- the second
  engine, for WebAssembly components (deep stacks, few instances), their sealed compile
  cache and one call of a component; :mod:`._python_exec` -- ``python_exec`` on them;
- :mod:`._capi` -- all that is taken from wasmtime-py beyond its public API, checked
  against the pinned wasmtime version by its test.
"""

from ._engine import WasmEngine
from ._link import LinkError
from ._loader import state_services, wasm_builtins
from ._modules import ModuleCache, ModuleMissingError, default_cache_dir
from ._runner import GuestLimits, WasmToolRunner
from ._spec import WasmToolSpec, discover_specs
from ._tool import WasmTool

__all__ = [
    "GuestLimits",
    "LinkError",
    "ModuleCache",
    "ModuleMissingError",
    "WasmEngine",
    "WasmTool",
    "WasmToolRunner",
    "WasmToolSpec",
    "default_cache_dir",
    "discover_specs",
    "state_services",
    "wasm_builtins",
]
