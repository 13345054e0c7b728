"""Building a :class:`WasmTool` for every built guest tool of a config."""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolcage.host_bindings import HostBindings
from toolcage.policies import MountPolicy, ToolcageConfig

from .._threads import run_in_worker
from .._tool import Tool
from ._engine import WasmEngine
from ._runner import GuestLimits, WasmToolRunner
from ._tool import NON_BINDING_NEEDS, WasmTool, discover_specs

DEFAULT_MEMORY_BYTES = 64 << 20
DEFAULT_OUTPUT_BYTES = 1 << 20


def wasm_builtins(config: ToolcageConfig, stack: AsyncExitStack) -> list[Tool]:
    """One :class:`WasmTool` per declared guest tool; the engine is closed with ``stack``
    (its running guests stopped, its reservation released)."""

    # The engine joins the runtime's exit stack only once it exists (on first use), so a
    # runtime that never ran a guest holds nothing to close.
    def on_open() -> None:
        stack.push_async_callback(run_in_worker, engine.close)

    engine = WasmEngine(
        max_memory_bytes=max([DEFAULT_MEMORY_BYTES, *_memory_overrides(config)]),
        one_cpu=config.limits.guests_on_one_cpu,
        on_open=on_open,
    )
    runner = WasmToolRunner(engine)
    mounts = MountPolicy.from_config(config)
    bindings = HostBindings.from_config(config)
    tools: list[Tool] = []
    for spec in discover_specs():
        name = spec.decl.name
        override = config.tools.get(name)
        limits = GuestLimits(
            timeout=(override.timeout if override and override.timeout else spec.timeout),
            memory_bytes=(override.memory_bytes if override and override.memory_bytes else 0)
            or DEFAULT_MEMORY_BYTES,
            output_bytes=(override.output_bytes if override and override.output_bytes else 0)
            or DEFAULT_OUTPUT_BYTES,
        )
        granted = bindings.granted(name, [n for n in spec.needs if n not in NON_BINDING_NEEDS])
        tools.append(WasmTool(spec, runner, mounts, bindings=granted, limits=limits))
    return tools


def _memory_overrides(config: ToolcageConfig) -> list[int]:
    return [o.memory_bytes for o in config.tools.values() if o.memory_bytes]
