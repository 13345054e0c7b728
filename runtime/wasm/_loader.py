"""Building a :class:`WasmTool` for every built guest tool of a config.

The guests share the runtime's one :class:`~toolcage.policies.MountPolicy` (the path check
has it too), and each guest's limits are its entry in the runtime's
:class:`~toolcage.policies.ToolLimitsTable`, the one the pipeline takes the call's deadline
and truncation from, with the guest defaults for the caps the operator left unset.

The memory, scratchpad and vault guests share the runtime's one state store
(:class:`~toolcage.host_bindings.StateServices`), opened on a guest's first use and closed
with the runtime; with ``[state] enabled = false`` those tools do not exist. The scheduler
guests keep their schedules in the same database (their own tables, their own
connections, opened on first use too); they exist while both ``[state]`` and
``[scheduler]`` are enabled. ``send_media`` sends through the host's channel.

``python_exec`` and the operator's component tools (:mod:`._component_tool`) run on an
engine of their own (:mod:`._component_engine`), made on its first call and closed with
the runtime like the guests' engine.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from contextlib import AsyncExitStack

import wasmtime
from toolcage.host_bindings import (
    Channel,
    HostBinding,
    HostBindings,
    HttpBinding,
    RateLimiter,
    StateServices,
)
from toolcage.host_bindings._relay import relaying, unwrapped
from toolcage.host_bindings._schedules import ScheduleBooks
from toolcage.policies import (
    ConfigError,
    MountPolicy,
    SecretPolicy,
    ToolcageConfig,
    ToolLimits,
    ToolLimitsTable,
)

from .._errors import UsageError
from .._threads import run_in_worker
from .._tool import FunctionDecl, Tool
from ._capi import define_raw_func
from ._component_engine import COMPONENTS
from ._component_link import check_imports, imports_of
from ._component_runner import ComponentRunner
from ._component_tool import ComponentTool
from ._components import ComponentCache
from ._engine import WasmEngine
from ._link import LinkError, link
from ._modules import ModuleCache
from ._operator_tools import OperatorTool, operator_tools
from ._python_exec import MEMORY_BYTES, NAME, TIMEOUT, PythonExecTool
from ._runner import GuestLimits, WasmToolRunner
from ._spec import NON_BINDING_NEEDS, WasmToolSpec, discover_specs
from ._tool import WasmTool

DEFAULT_MEMORY_BYTES = 64 << 20
DEFAULT_OUTPUT_BYTES = 1 << 20


def state_services(config: ToolcageConfig, stack: AsyncExitStack) -> StateServices | None:
    """The runtime's state store and embedder, closed with ``stack`` once opened; ``None``
    with ``[state] enabled = false``."""
    if not config.state.enabled:
        return None

    # Like the engine, the store joins the exit stack only once it is open.
    def on_state_open() -> None:
        stack.push_async_callback(run_in_worker, services.close)

    services = StateServices(config.state, config.base_dir, on_open=on_state_open)
    return services


def wasm_builtins(
    config: ToolcageConfig,
    stack: AsyncExitStack,
    *,
    mounts: MountPolicy,
    tool_limits: ToolLimitsTable,
    state: StateServices | None = None,
    channel: Channel | None = None,
    rate_limits: RateLimiter | None = None,
    secrets: SecretPolicy | None = None,
    taken: Iterable[str] = (),
) -> list[Tool]:
    """One :class:`WasmTool` per declared guest tool, under ``mounts`` and ``tool_limits``;
    the engine is closed with ``stack`` (its running guests stopped, its reservation
    released). The state tools use ``state`` (made by :func:`state_services` when not
    given); ``send_media`` sends through ``channel``; ``http`` and ``search`` count response
    bytes against ``rate_limits``, and ``http`` sends the ``secrets``. The operator's own guests
    (``[guest_tools]``, see :mod:`._operator_tools`) join them, checked now; their names
    may be neither a guest built-in's nor one in ``taken`` (the other built-ins)."""
    specs = discover_specs()
    builtin_names = [spec.decl.name for spec in specs] + [NAME]
    scheduling = config.state.enabled and config.scheduler.enabled
    if not config.state.enabled:
        specs = [spec for spec in specs if not StateServices.CAPABILITIES.intersection(spec.needs)]
    if not scheduling:
        specs = [spec for spec in specs if "scheduler" not in spec.needs]
    if state is None:
        state = state_services(config, stack)
    schedules = None
    if scheduling:

        def on_books_open() -> None:
            stack.push_async_callback(run_in_worker, books.close)

        schedules = books = ScheduleBooks.from_config(config, on_open=on_books_open)
    bindings = HostBindings.from_config(
        config,
        define_raw=define_raw_func,
        state=state,
        schedules=schedules,
        rate_limits=rate_limits,
        secrets=secrets,
    )
    own = operator_tools(config, taken=[*builtin_names, *taken], bindings=bindings.names)
    limits = {
        spec.decl.name: guest_limits(tool_limits.of(spec.decl.name, spec.timeout))
        for spec in [*specs, *(tool.spec for tool in own if not tool.component)]
    }
    component_limits = {
        tool.spec.decl.name: _component_limits(
            tool_limits.of(tool.spec.decl.name, tool.spec.timeout)
        )
        for tool in own
        if tool.component
    }

    # The engine joins the runtime's exit stack only once it exists (on first use), so a
    # runtime that never ran a guest holds nothing to close.
    def on_open() -> None:
        stack.push_async_callback(run_in_worker, engine.close)

    engine = WasmEngine(
        max_memory_bytes=max([DEFAULT_MEMORY_BYTES, *(g.memory_bytes for g in limits.values())]),
        one_cpu=config.limits.guests_on_one_cpu,
        on_open=on_open,
    )
    runner = WasmToolRunner(engine)
    tools: list[Tool] = []
    for spec in specs:
        name = spec.decl.name
        granted = bindings.granted(name, [n for n in spec.needs if n not in NON_BINDING_NEEDS])
        if spec.relay is not None:
            granted = _relayed(spec, granted)
            runner.share_module(name, spec.module)
        spec = _with_secret_note(spec, granted)
        tools.append(
            WasmTool(spec, runner, mounts, bindings=granted, limits=limits[name], channel=channel)
        )
    exec_limits = _component_limits(tool_limits.of(NAME, TIMEOUT))
    components = component_runner(config, stack, [exec_limits, *component_limits.values()])
    for tool in own:
        if tool.component:
            limit = component_limits[tool.spec.decl.name]
            tools.append(_component_tool(tool, components, bindings, mounts, limit))
        else:
            tools.append(_operator_tool(tool, runner, bindings, mounts, limits, channel))
    tools.append(python_exec_tool(config, components, mounts=mounts, limits=exec_limits))
    return tools


def component_runner(
    config: ToolcageConfig, stack: AsyncExitStack, limits: Iterable[GuestLimits]
) -> ComponentRunner:
    """The runner of the components (``python_exec``, the operator's component tools), on
    an engine sized for the largest of their ``limits``, closed with ``stack`` once opened."""

    def on_open() -> None:
        stack.push_async_callback(run_in_worker, engine.close)

    engine = WasmEngine(
        max_memory_bytes=max([MEMORY_BYTES, *(limit.memory_bytes for limit in limits)]),
        one_cpu=config.limits.guests_on_one_cpu,
        on_open=on_open,
        profile=COMPONENTS,
    )
    return ComponentRunner(engine)


def _component_limits(limits: ToolLimits) -> GuestLimits:
    """A component's limits: a guest's, with the interpreter's memory floor by default."""
    return dataclasses.replace(
        guest_limits(limits), memory_bytes=limits.memory_bytes or MEMORY_BYTES
    )


def python_exec_tool(
    config: ToolcageConfig,
    runner: ComponentRunner,
    *,
    mounts: MountPolicy,
    limits: GuestLimits,
) -> PythonExecTool:
    """``python_exec`` under ``mounts`` and its ``[tools.python_exec]`` ``limits``, run by
    the component ``runner``."""
    for name, entry in config.tools.items():
        if entry.component is not None and name != NAME:
            raise ConfigError(f"tools.{name}.component: only {NAME} runs a component")
    override = config.tools.get(NAME)
    component = None
    if override is not None and override.component is not None:
        component = (config.base_dir / override.component).resolve()
        if not component.is_file():
            raise ConfigError(f"tools.{NAME}.component: no such file: {component}")
    return PythonExecTool(runner, mounts, limits, component=component)


def _relayed(spec: WasmToolSpec, granted: list[HostBinding]) -> list[HostBinding]:
    """``granted`` with the binding a relay tool relays to in its relay form (the one call
    its declaration names). A capability the operator took away stays absent, so the tool
    fails to link and is refused, as any guest without its binding is."""
    if spec.relay is None:
        return granted
    capability, call = spec.relay
    try:
        return [relaying(b, call) if b.name == capability else b for b in granted]
    except ValueError as exc:
        raise UsageError(f"bad WASM tool declaration {spec.decl.name}.json: {exc}") from exc


def _with_secret_note(spec: WasmToolSpec, granted: list[HostBinding]) -> WasmToolSpec:
    """``spec`` with the configured secrets' names added to its description when its guest
    sends HTTP requests (a tool with a ``headers`` argument may name them in placeholders)."""
    http = next((b for b in map(unwrapped, granted) if isinstance(b, HttpBinding)), None)
    takes_headers = "headers" in spec.decl.parameters.get("properties", {})
    note = http.describe_secrets(takes_headers=takes_headers) if http is not None else ""
    if not note:
        return spec
    decl = FunctionDecl(spec.decl.name, f"{spec.decl.description}\n\n{note}", spec.decl.parameters)
    return dataclasses.replace(spec, decl=decl)


def _operator_tool(
    tool: OperatorTool,
    runner: WasmToolRunner,
    bindings: HostBindings,
    mounts: MountPolicy,
    limits: dict[str, GuestLimits],
    channel: Channel | None,
) -> WasmTool:
    """An operator's guest tool, its module registered with the runner's module cache."""
    spec = tool.spec
    name = spec.decl.name
    declared = [n for n in spec.needs if n not in NON_BINDING_NEEDS]
    granted = bindings.granted(name, declared)
    # A capability the egress grants withhold fails at call time, as for built-ins.
    check_module(tool, granted if len(granted) == len(declared) else None)
    runner.register_module_path(name, tool.wasm)
    return WasmTool(spec, runner, mounts, bindings=granted, limits=limits[name], channel=channel)


def _component_tool(
    tool: OperatorTool,
    runner: ComponentRunner,
    bindings: HostBindings,
    mounts: MountPolicy,
    limits: GuestLimits,
) -> ComponentTool:
    """An operator's component tool, its imports checked against its declaration."""
    spec = tool.spec
    declared = [n for n in spec.needs if n not in NON_BINDING_NEEDS]
    imports = check_component(tool, declared, runner.engine)
    granted = bindings.granted(spec.decl.name, declared)
    return ComponentTool(
        spec, tool.wasm, runner, mounts, imports=imports, bindings=granted, limits=limits
    )


def check_component(
    tool: OperatorTool, declared: Iterable[str], runs_on: WasmEngine
) -> frozenset[str]:
    """The capabilities the component of ``tool`` imports; a config error when it is not
    a usable component or imports beyond WASI 0.2 and the ``declared`` capabilities.

    It is compiled to read its imports, through the on-disk cache (seconds the first time,
    milliseconds after), on an engine configured as ``runs_on``, the one that will run it:
    its first call then finds the compiled code cached. The engine is the check's own, and
    closed at once, so that a runtime that never runs the tool opens no component engine."""
    engine = wasmtime.Engine(runs_on.profile.configure(runs_on.max_memory_bytes))
    cache = ComponentCache(engine, settings=runs_on.settings)
    try:
        imports = imports_of(cache.get(tool.wasm), engine)
        return check_imports(tool.spec.decl.name, imports, declared)
    except LinkError as exc:
        raise ConfigError(f"{tool.declaration}: needs: {exc}") from exc
    except (wasmtime.WasmtimeError, OSError, UsageError) as exc:
        reason = str(exc).strip().splitlines()[0]
        raise ConfigError(f"{tool.wasm}: not a usable WASM component: {reason}") from exc
    finally:
        cache.close()
        engine.close()


def check_module(tool: OperatorTool, bindings: list[HostBinding] | None) -> None:
    """Refuse a module that is not WASM or, given ``bindings``, that imports more than they
    and WASI provide. It is compiled and linked on an engine of its own, closed at once, so
    that a runtime that never runs a guest still opens no engine (the compiled code stays
    in the on-disk cache under its own key)."""
    engine = wasmtime.Engine()
    cache = ModuleCache(engine, settings="load-check")
    name = tool.spec.decl.name
    try:
        module = cache.compile(tool.wasm.read_bytes())
        if bindings is not None:
            link(name, engine, module, bindings)
    except LinkError as exc:
        raise ConfigError(f"{tool.declaration}: needs: {exc}") from exc
    except (wasmtime.WasmtimeError, OSError) as exc:
        reason = str(exc).strip().splitlines()[0]
        raise ConfigError(f"{tool.wasm}: not a usable WASM module: {reason}") from exc
    finally:
        cache.close()


def guest_limits(limits: ToolLimits) -> GuestLimits:
    """A guest's limits: the tool's, with the guest defaults for caps left unset."""
    return GuestLimits(
        timeout=limits.timeout,
        memory_bytes=limits.memory_bytes or DEFAULT_MEMORY_BYTES,
        output_bytes=limits.output_bytes or DEFAULT_OUTPUT_BYTES,
        reply_bytes=limits.truncate_bytes,
    )
