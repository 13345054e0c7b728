"""``execute_with_policy``: the one path every tool call takes.

In order, each step able to end the call with its own error envelope:

1. **lookup** -- a tool name that is not a string: ``validation_error``; unknown or
   disabled for this agent: ``not_found``; the runtime is closed: ``cancelled``;
2. **decode** -- arguments as an object (JSON text is parsed; input that is too large, too
   deep or not plain JSON is refused, see :mod:`._decoding`);
3. **before hooks** -- may block (``blocked``) or rewrite the arguments;
4. **normalise** -- camelCase/snake_case names, common aliases (``file_path`` for
   ``path``), JSON-in-a-string values; a required parameter sent empty or null is missing;
5. **validate** -- JSON Schema: ``validation_error`` naming field, expectation and value;
6. **safety gate** -- privileged tools need approval: ``permission_denied``; then the
   operator's rate limits (see :mod:`._rate_limit_step`): ``permission_denied`` with
   ``retry_after`` in its details. The gate comes after normalising and validating, so an
   approver is shown the arguments the tool runs with (``{"cmd": ...}`` is shown as
   ``{"command": ...}``), and a call that could not run asks no one and spends no budget;
7. **security checks** -- paths, shell, egress: ``permission_denied``;
8. **execute under a deadline** -- a ``limited``/``exclusive_by_type`` tool first waits
   for its turn, inside the deadline (see :mod:`._concurrency`); ``timeout`` on time even
   if the tool ignores cancellation (a tool that stops its own work at the deadline reports
   it, see :mod:`._deadline`), with the seconds elapsed and the limit in its ``details``;
   any exception becomes ``execution_error``. A tool that can finish on the calling thread
   (:data:`FinishNow`: a guest that reads through ``fs``) is asked to first, with the call's
   deadline, at which it stops its own work: a call it finishes has no task (and yields to
   the event loop only when :data:`TURN_EVERY` has passed since such a call last did);
9. **bound** -- an error's message and details pass through the runtime's
   :class:`~toolcage.policies.Redactor` (an error leaves the process: to the model, the
   embedder's logs, the audit log, a span); images beyond the ``[images]`` limits become a
   text block saying so (see :mod:`._images`); the tool's lines that could pass for the
   pipeline's own are escaped and the display line is made visible text; every part of the
   result (text, details, display, an error's message) beyond the byte limit is cut and
   kept in the output store (see :mod:`._bounds`);
10. **after / persist hooks**, then the ``tool_execution_end`` event.

Every call yields exactly one :class:`ToolResult`, with its duration, and emits one start and
one end event. When the runtime has an audit log or telemetry, each call also gets a
:class:`~._observe.CallTrace` that records, for them, the steps it entered and what the
safety gate and the security checks decided; without, nothing is traced. Only the caller's own
cancellation propagates (after the end event, with a ``cancelled`` result, is delivered):
anyio's rule that cancellation is never swallowed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
from toolcage.policies import ImagesConfig, LimitsConfig, Redactor, ToolLimits, ToolLimitsTable

from ._approval import SafetyGate
from ._arguments import ArgumentSpec, normalise_arguments, validate_arguments
from ._bounds import bound_error, bound_result, detach
from ._concurrency import ConcurrencyGates, ToolGate
from ._deadline import STOP_GRACE, CallDeadline, DeadlineExceeded, run_with_deadline
from ._decoding import MAX_NAME_CHARS, checked_tool_name, decode_arguments
from ._errors import (
    ToolBlockedError,
    ToolCancelledError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from ._hooks import Hooks, ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate
from ._images import limit_images
from ._observe import CallTrace, Observation
from ._output_store import OutputStore
from ._rate_limit_step import RateLimitStep
from ._registry import ToolRegistry
from ._result import TextContent, ToolResult
from ._security import SecurityCheck
from ._tool import (
    TOOL_NAME,
    ProgressCallback,
    ProgressUpdate,
    Tool,
    ToolCall,
    ToolExecutionContext,
    new_call_id,
)

logger = logging.getLogger("toolcage")


FinishNow = Callable[[Mapping[str, Any], ToolExecutionContext, CallDeadline], ToolResult | None]
"""A tool's optional ``execute_now(args, ctx, deadline)``: the call run on the calling
thread when the tool can finish it there, stopping its own work at ``deadline``; None when it
did not, and the pipeline runs ``execute`` under the deadline as for any tool. A call it
finishes costs no task and no turn of the event loop (a guest that reads a file through
``fs`` finishes that way, see :meth:`~.wasm.WasmTool.execute_now`)."""


TURN_EVERY = 0.005
"""Seconds after which a call its tool finishes on the calling thread first yields to the
event loop once: such calls back to back never wait on it otherwise, and other tasks, timers
(a caller's ``move_on_after`` among them) and cancellation need their turn."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a call of one tool needs from the pipeline's tables, looked up once per tool.

    A name keeps its tool (the registry neither replaces nor removes one); a plan is made
    anew should another tool ever answer to the name.
    """

    tool: Tool
    """The tool the plan was made for."""
    spec: ArgumentSpec
    """How its arguments are normalised and validated."""
    limits: ToolLimits
    """Its deadline and byte limit."""
    gate: ToolGate | None
    """The concurrency gate its calls wait on, if any."""
    now: FinishNow | None
    """The tool's ``execute_now``, when it has one and no gate: see :data:`FinishNow`."""


class ToolPipeline:
    """Runs tool calls through lookup, gate, validation, checks, deadline and truncation."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        limits: LimitsConfig,
        output_store: OutputStore,
        gate: SafetyGate | None = None,
        hooks: Hooks | None = None,
        checks: list[SecurityCheck] | None = None,
        tool_limits: ToolLimitsTable | None = None,
        images: ImagesConfig | None = None,
    ) -> None:
        self.registry = registry
        self.limits = limits
        self.output_store = output_store
        self.gate = gate or SafetyGate()
        self.hooks = hooks or Hooks()
        self.checks = checks if checks is not None else []
        self.tool_limits = ToolLimitsTable(limits, {}) if tool_limits is None else tool_limits
        """Each tool's deadline and truncation, resolved once (shared with the tools)."""
        self.images = ImagesConfig() if images is None else images
        """How large an image from a tool may be when it reaches a model."""
        self.gates = ConcurrencyGates(self.tool_limits)
        """Each tool's concurrency mode and the limits it shares with other calls."""
        for tool in registry:  # a mode that names arguments the tool lacks fails here
            self.gates.check(tool.schema().name, tool)
        self.stop_grace = STOP_GRACE
        """Seconds past the deadline a tool that stops its own work has to report."""
        self.closed = False
        """Set when the runtime closes: every later call is refused (``cancelled``)."""
        self.observation: Observation | None = None
        """The audit log and telemetry, when configured: each call is then traced."""
        self.rate_limits: RateLimitStep | None = None
        """The operator's rate limits, when configured: each call spends from them."""
        self.redactor = Redactor()
        """What every error message passes through (the runtime sets its own)."""
        self._turned = 0.0
        """When a call that finishes on the calling thread last yielded to the event loop."""
        self._specs: dict[str, ArgumentSpec] = {}
        self._plans: dict[str, _Plan] = {}

    async def execute(self, call: ToolCall, ctx: ToolExecutionContext) -> ToolResult:
        """Run one call; always returns its result (see the module docstring)."""
        started = time.perf_counter()
        refusal: ToolError | None = None
        name = call.name
        if (type(name) is not str or name not in self._plans) and (  # a planned name is valid
            not isinstance(name, str)
            or len(name) > MAX_NAME_CHARS
            or TOOL_NAME.fullmatch(name) is None
        ):
            name, refusal = checked_tool_name(call.name)
            call = ToolCall(name, call.arguments, call.id)
        if not call.id:
            call = ToolCall(call.name, call.arguments, new_call_id())
        ctx = ctx.for_call(call.id, ctx.progress)
        if self.hooks.listeners:
            ctx = ctx.for_call(call.id, self._progress_sink(call, ctx))
        trace = None if self.observation is None else self.observation.begin(call, ctx)
        if self.hooks.listeners:
            await self.hooks.emit(ToolExecutionStart(call, ctx))
        try:
            if refusal is not None:
                raise refusal
            result = await self._run(call, ctx, trace)
        except ToolError as exc:
            result = self._failure(call, exc, ctx)
        except Exception as exc:
            logger.exception(
                "tool %s crashed",
                call.name,
                extra={"event": "tool.crash", "tool": call.name, "call_id": call.id},
            )
            result = self._failure(call, ToolExecutionError(_describe_crash(exc)), ctx)
        except BaseException as exc:
            if not isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            cancelled = ToolCancelledError(f"Tool {call.name} was cancelled")
            with anyio.CancelScope(shield=True):
                cancelled_result = ToolResult.failure(call.name, cancelled)
                await self._finish(call, ctx, cancelled_result, started, trace)
            raise
        hooks = self.hooks
        if trace is None and not (hooks.after or hooks.persist or hooks.listeners):
            return result.finished(call.name, time.perf_counter() - started)  # all _finish does
        return await self._finish(call, ctx, result, started, trace)

    async def _run(
        self, call: ToolCall, ctx: ToolExecutionContext, trace: CallTrace | None
    ) -> ToolResult:
        if self.closed:
            raise ToolCancelledError(f"Tool {call.name} was cancelled: the runtime is closed")
        tool = self.registry.get(call.name, ctx.agent_id)
        plan = self._plans.get(call.name)
        if plan is None or plan.tool is not tool:
            plan = self._plan(call.name, tool)
        args = decode_arguments(call.arguments, self.limits.max_argument_bytes)
        if trace is not None:
            trace.found(tool, args)
        if self.hooks.before:
            block, call = await self.hooks.run_before(ToolCall(call.name, args, call.id), ctx)
            if block is not None:
                raise ToolBlockedError(block.reason)
            args = dict(call.arguments) if isinstance(call.arguments, Mapping) else args
        spec = plan.spec
        args = normalise_arguments(args, spec)
        validate_arguments(args, spec)
        if trace is not None:
            await trace.admit(self.gate, tool, args, ctx)
        elif not self.gate.passes(tool):
            await self.gate.admit(call.name, tool, args, ctx)
        if self.rate_limits is not None:
            await self.rate_limits.admit(call.name, tool, ctx)
        checked: Mapping[str, Any] = args
        if trace is None:
            for check in self.checks:
                checked = check.check(tool, checked, ctx)
        else:
            checked = trace.check(self.checks, tool, checked, ctx)
        limits = plan.limits
        timeout = limits.timeout
        gate = plan.gate
        now = plan.now
        if now is not None and time.monotonic() - self._turned > TURN_EVERY:
            await anyio.lowlevel.checkpoint()
            self._turned = time.monotonic()
        began = time.monotonic()
        try:
            result = None
            if now is not None:
                result = now(checked, ctx, CallDeadline(began + timeout, timeout))
            if result is None:
                if gate is None:
                    work = tool.execute(checked, ctx)
                else:
                    work = gate.run(functools.partial(tool.execute, checked, ctx), checked)
                result = await run_with_deadline(work, timeout, grace=self.stop_grace)
        except DeadlineExceeded:
            raise ToolTimeoutError(
                f"Tool {call.name} timed out after {timeout:g} s",
                details=_timing(began, timeout),
            ) from None
        except TimeoutError as exc:
            if isinstance(exc, ToolError):
                _timed(exc, began, timeout)
                raise
            raise ToolTimeoutError(
                f"Tool {call.name} timed out: {exc}", details=_timing(began, timeout)
            ) from exc
        if not isinstance(result, ToolResult):
            raise ToolExecutionError(
                f"Tool {call.name} returned {type(result).__name__}, not a ToolResult"
            )
        if result.is_error:
            if result.error is None:
                raise ToolExecutionError(result.output_text or f"Tool {call.name} failed")
            if isinstance(result.error, ToolTimeoutError):
                _timed(result.error, began, timeout)
            result = self._redact_error(result)
        content = result.content
        if len(content) != 1 or type(content[0]) is not TextContent:
            result = limit_images(result, self.images)
        return bound_result(result, limits.truncate_bytes, self.output_store, ctx)

    def _failure(self, call: ToolCall, error: ToolError, ctx: ToolExecutionContext) -> ToolResult:
        """The result of a failed call: its error bounded and holding no frames."""
        limit = self.tool_limits.truncate_bytes(call.name)
        redacted = self._redacted(detach(error))
        bounded = bound_error(redacted, limit, self.output_store, ctx)
        return ToolResult.failure(call.name, bounded)

    def _redact_error(self, result: ToolResult) -> ToolResult:
        """A tool's own failed result with its error redacted (its content too, when it is
        the error's message, as :meth:`ToolResult.failure` makes it)."""
        error = result.error
        redacted = None if error is None else self._redacted(error)
        if error is None or redacted is None or redacted is error:
            return result
        content = result.content
        if len(content) == 1 and content[0] == TextContent(error.message):
            content = (TextContent(redacted.message),)
        return dataclasses.replace(result, content=content, error=redacted)

    def _redacted(self, error: ToolError) -> ToolError:
        """``error``, or a copy with its message and details redacted."""
        message = self.redactor.text(error.message)
        details = error.details if not error.details else self.redactor.value(error.details)
        if message == error.message and details == error.details:
            return error
        return error.rewritten(message, details=details)

    async def _finish(
        self,
        call: ToolCall,
        ctx: ToolExecutionContext,
        result: ToolResult,
        started: float,
        trace: CallTrace | None,
    ) -> ToolResult:
        result = result.finished(call.name, time.perf_counter() - started)
        if self.hooks.after or self.hooks.persist:
            result = await self._result_hooks(call, ctx, result)
        if trace is not None:
            trace.end(result)
        if self.hooks.listeners:
            await self.hooks.emit(ToolExecutionEnd(call, ctx, result))
        return result

    async def _result_hooks(
        self, call: ToolCall, ctx: ToolExecutionContext, result: ToolResult
    ) -> ToolResult:
        try:
            await self.hooks.run_after(call, ctx, result)
            return await self.hooks.run_persist(call, ctx, result)
        except Exception as exc:
            logger.exception(
                "a result hook failed for %s",
                call.name,
                extra={"event": "tool.hook_failed", "tool": call.name, "call_id": call.id},
            )
            failure = ToolExecutionError(f"a result hook failed: {_describe_crash(exc)}")
            return ToolResult.failure(call.name, self._redacted(failure), result.duration)

    def prepared(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """Decoded ``args`` of tool ``name`` normalised and validated: what the safety gate
        sees and the tool runs with (``validation_error`` otherwise)."""
        spec = self._spec(name)
        args = normalise_arguments(args, spec)
        validate_arguments(args, spec)
        return args

    def _spec(self, name: str) -> ArgumentSpec:
        spec = self._specs.get(name)
        if spec is None:
            spec = self._specs[name] = ArgumentSpec.of(self.registry.declaration(name))
        return spec

    def _plan(self, name: str, tool: Tool) -> _Plan:
        plan = _Plan(
            tool,
            self._spec(name),
            self.tool_limits.of(name, tool.timeout),
            gate := self.gates.of(name, tool),
            None if gate is not None else getattr(tool, "execute_now", None),
        )
        self._plans[name] = plan
        return plan

    def _progress_sink(self, call: ToolCall, ctx: ToolExecutionContext) -> ProgressCallback:
        """Progress reports become ``tool_execution_update`` events, from any thread."""
        hooks = self.hooks
        loop = asyncio.get_running_loop()
        outer = ctx.progress

        def report(update: ProgressUpdate) -> None:
            outer(update)
            loop.call_soon_threadsafe(hooks.emit_sync, ToolExecutionUpdate(call, ctx, update))

        return report


def _timing(began: float, timeout: float) -> dict[str, Any]:
    """What a timeout's envelope says of it: seconds elapsed since the call's deadline
    started (waiting for a concurrency limit included), the limit, and that a retry may
    succeed."""
    limit: float | int = int(timeout) if float(timeout).is_integer() else timeout
    return {"elapsed": round(time.monotonic() - began, 3), "timeout": limit, "retryable": True}


def _timed(error: ToolError, began: float, timeout: float) -> None:
    """Add the timing to a tool's own timeout error; what the tool said itself stands (the
    shell knows the command's own timeout and how long it ran)."""
    error.details = {**_timing(began, timeout), **(error.details or {})}


def _describe_crash(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
