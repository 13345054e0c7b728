"""The tools and security checks a :class:`Runtime` gets from its config.

Each area contributes here: the file tools and their path policy, the shell, the network
and time tools (the MCP servers' tools are added by ``Runtime.from_config``, which hands
the servers that did not start to the registry). Each policy is built once and handed to
everything it governs: one :class:`~toolcage.policies.MountPolicy` serves the path check
and the guest tools, and the runtime's :class:`~toolcage.policies.ToolLimitsTable` gives
the pipeline, the guests and the shell the same limits of each tool. Resources that need
closing (a wasmtime engine, the sidecar client) are entered into ``stack`` so that closing
the runtime closes them.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from toolcage.host_bindings import Channel, RateLimiter, StateServices
from toolcage.policies import MountPolicy, SecretPolicy, ToolcageConfig, ToolLimitsTable

from ._output_store import OutputStore, ToolOutputRead
from ._path_check import PathCheck
from ._security import SecurityCheck
from ._tool import Tool
from .shell import shell_builtins
from .wasm import state_services, wasm_builtins


def load_builtins(
    config: ToolcageConfig,
    output_store: OutputStore,
    stack: AsyncExitStack,
    tool_limits: ToolLimitsTable,
    *,
    channel: Channel | None = None,
    rate_limits: RateLimiter | None = None,
    secrets: SecretPolicy | None = None,
) -> tuple[list[Tool], list[SecurityCheck], StateServices | None]:
    """Build the built-in tools, the security checks and the state services (``None``
    when ``[state]`` is disabled) for ``config``; the tools take their limits from
    ``tool_limits``, ``send_media`` sends through ``channel``, and the network tools count
    response bytes against ``rate_limits`` and send the ``secrets`` (loaded from ``config``
    when not given)."""
    mounts = MountPolicy.from_config(config)
    tools: list[Tool] = [ToolOutputRead(output_store, page_limit=config.limits.truncate_bytes)]
    checks: list[SecurityCheck] = []
    checks.append(PathCheck(mounts))
    shell_tools, shell_checks = shell_builtins(config, stack, tool_limits=tool_limits)
    tools += shell_tools
    checks += shell_checks
    state = state_services(config, stack)
    tools += wasm_builtins(
        config,
        stack,
        mounts=mounts,
        tool_limits=tool_limits,
        state=state,
        channel=channel,
        rate_limits=rate_limits,
        secrets=secrets,
        taken=[tool.schema().name for tool in tools],
    )
    return tools, checks, state
