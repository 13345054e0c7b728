"""The embedding API: a :class:`Runtime` built from the operator's config.

>>> async with Runtime.from_config("toolcage.toml") as runtime:   # doctest: +SKIP
...     result = await runtime.execute("file_read", {"path": "/workspace/notes.md"})
...     print(result.envelope())
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from toolcage.host_bindings import Channel, RateLimiter, StateServices
from toolcage.policies import (
    ConfigError,
    Redactor,
    SecretPolicy,
    ToolcageConfig,
    ToolLimitsTable,
    load_config,
)
from toolcage.policies._log_redaction import redact_logs

from ._approval import ApprovalPolicy, SafetyGate
from ._builtins import load_builtins
from ._config_check import check_config
from ._hooks import Hooks
from ._output_store import OutputStore
from ._pipeline import ToolPipeline
from ._rate_limit_step import RateLimitStep, check_byte_quotas, rate_limiter
from ._registry import ToolRegistry
from ._result import ToolResult
from ._security import SecurityCheck
from ._tool import DEFAULT_CONTEXT, Tool, ToolCall, ToolExecutionContext, new_call_id
from .observe import AuditHandler
from .observe._observers import observation_for

if TYPE_CHECKING:
    from .agent._model_client import ModelClient
    from .observe._telemetry import ToolTelemetry


class Runtime:
    """Tools, policies and the pipeline, ready to execute calls.

    Use :meth:`from_config` to get the built-in tools and the operator's policies; the
    constructor is for embedders who assemble everything themselves. A runtime owns
    resources (the wasmtime engine, the shell sidecar): close it with ``await aclose()`` or
    ``async with``.

    Everything the runtime sends out of the process -- audit records, spans, the records of
    the ``toolcage`` loggers, error messages -- passes through its one :attr:`redactor`.
    """

    def __init__(
        self,
        config: ToolcageConfig | None = None,
        *,
        tools: Iterable[Tool] = (),
        checks: Iterable[SecurityCheck] = (),
        approval: ApprovalPolicy | None = None,
        hooks: Hooks | None = None,
        stack: AsyncExitStack | None = None,
        output_store: OutputStore | None = None,
        tool_limits: ToolLimitsTable | None = None,
        state: StateServices | None = None,
        audit: AuditHandler | None = None,
        telemetry: ToolTelemetry | None = None,
        rate_limits: RateLimiter | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = ToolcageConfig() if config is None else config
        self.redactor = Redactor.from_config(self.config.audit) if redactor is None else redactor
        """The ``[audit]`` redaction rules and (from :meth:`from_config`) the values of the
        configured secrets: what every record, span, log record and error message that
        leaves the process passes through."""
        redact_logs(self.redactor)
        self.state = state
        """The state store the memory tools use and the agent loop records turns in
        (``None``: no store)."""
        # `is None`, not `or`: an empty store is falsy (it has a length), and a second store
        # would leave the handles the pipeline hands out unreadable by tool_output_read.
        self.output_store = (
            OutputStore.from_config(self.config.output_store)
            if output_store is None
            else output_store
        )
        self.registry = ToolRegistry(tools)
        self.hooks = Hooks() if hooks is None else hooks
        self.gate = SafetyGate(
            self.config.approval.auto_approve, approval, self.config.approval.remember
        )
        self._stack = AsyncExitStack() if stack is None else stack
        self._closed = False
        self.pipeline = ToolPipeline(
            self.registry,
            limits=self.config.limits,
            output_store=self.output_store,
            gate=self.gate,
            hooks=self.hooks,
            checks=list(checks),
            tool_limits=(
                ToolLimitsTable.from_config(self.config) if tool_limits is None else tool_limits
            ),
            images=self.config.images,
        )
        self.pipeline.redactor = self.redactor
        self.pipeline.observation, self._audit = observation_for(
            self.config, self.redactor, audit, telemetry
        )
        self.rate_limits = rate_limits or rate_limiter(self.config, self._stack)
        """The ``[rate_limits]`` and their counters (``None``: no limits); its ``clock``
        can be replaced."""
        if self.rate_limits is not None:
            self.pipeline.rate_limits = RateLimitStep(self.rate_limits)

    @classmethod
    def from_config(
        cls,
        path: str | Path | ToolcageConfig | None = None,
        *,
        approval: ApprovalPolicy | None = None,
        tools: Iterable[Tool] = (),
        channel: Channel | None = None,
        models: Mapping[str, ModelClient] | None = None,
        audit: AuditHandler | None = None,
        telemetry: ToolTelemetry | None = None,
    ) -> Runtime:
        """A runtime with the built-in tools under the policies of a config file.

        ``path=None`` uses the embedded defaults (a ``./workspace`` directory mounted at
        ``/workspace``). Extra host ``tools`` are registered beside the built-in ones; pass
        here any host tool the config names. ``channel`` is where ``send_media`` and
        ``send_message`` send. ``models`` are the model clients ``[agents.*]`` profiles run
        on (by their ``model`` name): with them and at least one agent, ``delegate_to_agent``
        exists. ``audit`` receives the audit records instead of the ``[audit] path`` file;
        ``telemetry`` traces and measures calls with the providers it was given.
        Raises :class:`ConfigError` for a config that cannot be read or that does not fit
        this runtime (see :mod:`._config_check`).
        """
        config = path if isinstance(path, ToolcageConfig) else load_config(path)
        source = "config" if path is None or isinstance(path, ToolcageConfig) else path
        stack = AsyncExitStack()
        store = OutputStore.from_config(config.output_store)
        tool_limits = ToolLimitsTable.from_config(config)
        limiter = rate_limiter(config, stack)
        try:
            secrets = SecretPolicy.load(config.secrets, config.base_dir)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        redactor = Redactor.from_config(config.audit, secrets.values)
        builtin_tools, checks, state = load_builtins(
            config,
            store,
            stack,
            tool_limits,
            channel=channel,
            rate_limits=limiter,
            secrets=secrets,
        )
        mcp = None
        if config.mcp.servers:
            from .mcp.servers import McpServers  # the MCP SDK, only for configs that use it

            mcp = McpServers(config, stack, redactor)
            builtin_tools += mcp.tools
        delegate = None
        if models is not None and config.agents:
            from .agent._delegate import (
                DelegateToAgent,  # the agent loop, only for hosts that use it
            )

            delegate = DelegateToAgent(config, models)
            builtin_tools.append(delegate)
        all_tools = [*builtin_tools, *tools]
        try:
            names = {tool.schema().name for tool in all_tools}
            check_config(config, names, withheld=mcp.withheld if mcp is not None else ())
            check_byte_quotas(config, all_tools)
        except ConfigError as exc:
            if mcp is not None:
                mcp.hub.close()
            raise ConfigError(f"{source}: {exc}") from None
        runtime = cls(
            config,
            tools=all_tools,
            checks=checks,
            approval=approval,
            stack=stack,
            output_store=store,
            tool_limits=tool_limits,
            state=state,
            audit=audit,
            telemetry=telemetry,
            rate_limits=limiter,
            redactor=redactor,
        )
        if mcp is not None:
            mcp.attach(runtime)
        for agent_id, agent in config.agents.items():
            runtime.registry.enable_only(agent_id, agent.tools)
        if delegate is not None:
            delegate.attach(runtime)
        return runtime

    def register(self, tool: Tool) -> None:
        """Add a host tool; one whose concurrency mode names arguments it does not have is
        refused."""
        self.pipeline.gates.check(tool.schema().name, tool)
        self.registry.register(tool)

    @property
    def approval(self) -> ApprovalPolicy | None:
        return self.gate.policy

    @approval.setter
    def approval(self, policy: ApprovalPolicy | None) -> None:
        self.gate.policy = policy

    async def execute(
        self,
        tool_name: str,
        arguments: Mapping[str, Any] | str,
        context: ToolExecutionContext | None = None,
    ) -> ToolResult:
        """Run one tool call through the full pipeline; never raises for a tool failure."""
        return await self.pipeline.execute(
            ToolCall(tool_name, arguments, new_call_id()), context or DEFAULT_CONTEXT
        )

    async def execute_call(self, call: ToolCall, context: ToolExecutionContext) -> ToolResult:
        """Like :meth:`execute`, for a call as a model made it (keeps its id)."""
        return await self.pipeline.execute(call, context)

    async def aclose(self) -> None:
        """Refuse further calls (``cancelled``), stop running guests and shell commands and
        wait for them (bounded), then release the engine, the sidecar and any other
        resource the tools hold; last, write what the audit log holds and stop its writer."""
        if not self._closed:
            self._closed = True
            self.pipeline.closed = True
            try:
                await self._stack.aclose()
            finally:
                if self._audit is not None:  # last: the records of calls the close stopped
                    await self._audit.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True) and _has_resources(self._stack):
            warnings.warn(
                "Runtime was not closed; use 'async with' or 'await runtime.aclose()'",
                ResourceWarning,
                stacklevel=1,
            )


def _has_resources(stack: AsyncExitStack) -> bool:
    return bool(getattr(stack, "_exit_callbacks", ()))
