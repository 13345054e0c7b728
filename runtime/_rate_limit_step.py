"""The pipeline's rate-limit step: a call of a limited tool spends from its budgets first.

It runs right after approval. A tool no limit names costs one dictionary lookup; a
limited one costs one statement on the state store. The embedded store answers on the
event loop's own thread when it can do so without waiting (no other writer holds the
file); otherwise, and always for a libSQL server, the store is asked from a worker thread,
so the event loop never waits on a lock or the network. When the call is observed (the
audit log, telemetry), a refusal is recorded as the ``rate_limit`` policy's decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AsyncExitStack

from toolcage.host_bindings import RateLimited, RateLimiter
from toolcage.host_bindings._store import StoreError
from toolcage.host_bindings._store._counters import WouldWait
from toolcage.policies import ConfigError, ToolcageConfig
from toolcage.policies._rate_limits import CLASSES, METERED_NEEDS

from ._errors import PermissionDeniedError, ToolExecutionError
from ._observe import current_trace
from ._threads import run_in_worker
from ._tool import DeclaresNeeds, Tool, ToolExecutionContext


class RateLimitStep:
    """Admits calls under a :class:`~toolcage.host_bindings.RateLimiter`'s limits."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter

    async def admit(self, name: str, tool: Tool, ctx: ToolExecutionContext) -> None:
        """Spend the call from every budget of ``tool``; ``permission_denied`` with
        ``retry_after`` in its details when one is spent."""
        limiter = self.limiter
        rules = limiter.rules(name)
        if rules is None:
            needs = tool.needs if isinstance(tool, DeclaresNeeds) else ()
            rules = limiter.assign(name, tool.safety_tier.value, needs)
        if not rules:
            return
        principal = ctx.principal
        try:
            try:
                if not limiter.opened:
                    raise WouldWait("the store is not open yet")
                limiter.admit(rules, principal, wait=False)
            except WouldWait:
                await run_in_worker(lambda: limiter.admit(rules, principal))
        except RateLimited as exc:
            trace = current_trace()
            if trace is not None:
                trace.decide("rate_limit", False, exc.message)
            raise PermissionDeniedError(exc.message, details=exc.details) from None
        except StoreError as exc:
            raise ToolExecutionError(f"rate limits cannot be counted: {exc}") from None


def rate_limiter(config: ToolcageConfig, stack: AsyncExitStack) -> RateLimiter | None:
    """The limiter of ``config``'s ``[rate_limits]`` (``None`` when there are none); its
    store is closed with ``stack`` once it has been opened."""
    if not config.rate_limits:
        return None

    def on_open() -> None:
        stack.push_async_callback(run_in_worker, limiter.close)

    limiter = RateLimiter(config.rate_limits, config.state, config.base_dir, on_open=on_open)
    return limiter


def check_byte_quotas(config: ToolcageConfig, tools: Iterable[Tool]) -> None:
    """Refuse a byte quota that names a tool whose response bytes are not counted
    (:class:`ConfigError` naming the key)."""
    counted = {
        tool.schema().name
        for tool in tools
        if isinstance(tool, DeclaresNeeds) and METERED_NEEDS.intersection(tool.needs)
    }
    problems = [
        f"rate_limits.{limit}.bytes: counted only for the tools that fetch through the host's"
        f" HTTP client; {name!r} is not one"
        for limit, settings in config.rate_limits.items()
        if settings.bytes is not None
        for name in settings.tools
        if name not in CLASSES and name not in counted
    ]
    if problems:
        raise ConfigError("; ".join(problems))
