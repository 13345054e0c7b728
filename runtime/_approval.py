"""The safety gate: who says yes to a privileged call.

``privileged`` tools run only when the operator allows them outright (config
``approval.auto_approve``) or an :class:`ApprovalPolicy` approves the call. An approver may
answer "always"; that standing allowance is remembered for the tool *and a hash of its
canonical arguments*, never for the tool or the program alone, so approving ``ls -la``
once does not approve ``rm -rf ~``; and only for the principal who was asked, by the
operator's ``[approval] remember`` scope (the same user and agent, by default): user A's
"always" never runs user B's call unasked. The request says whose calls an "always" would
cover (:attr:`ApprovalRequest.always_covers`).

Session kinds. A ``worker`` session runs ``read_only`` tools only (network reads among
them, see :class:`~._tool.SafetyTier`): any other call is refused before an approver is
asked (the worker's guests also lack the handles to write, see
:class:`~._tool.SessionKind`).

Chains. An approval needed by a delegated agent's call goes up its chain of sessions to
the first one that has a channel (the requester itself, then its parents): the
:class:`ApprovalRequest` names that channel and the chain of agents, so the approver can
ask the user where they are. When no session in the chain has a channel, the call is
refused without asking. A top-level session's calls go to the approver as they are.

Deferred approval. The agent loop asks for the approvals of a round's privileged calls
(:meth:`SafetyGate.decide_ahead`) while its other calls run, and runs each privileged call
once it has its answer; the pipeline's :meth:`SafetyGate.admit` then uses that answer for
that call id and those arguments, and asks again for anything else.

A refusal says which tier the call needed: ``details={"required_tier": ...}``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from toolcage.policies import ApprovalScope, Principal, SessionKind

from ._errors import PermissionDeniedError
from ._tool import SafetyTier, Tool, ToolExecutionContext


class Approval(StrEnum):
    """An approver's answer."""

    DENY = "deny"
    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What an approver is shown."""

    tool: str
    """The tool to run."""
    arguments: Mapping[str, Any]
    """Its arguments."""
    context: ToolExecutionContext
    """The calling session's context."""
    channel_id: str | None = None
    """Where to ask the user: the channel of the first session up the chain that has one."""
    chain: tuple[str, ...] = ()
    """The agents from the host's own turn down to the one making the call."""
    always_covers: str = ""
    """Whose later calls with these arguments an "always" answer would run unasked
    (``"user 'ada' and agent 'default', in any session"``)."""


class ApprovalPolicy(Protocol):
    """Decides whether a privileged call may run."""

    async def approve(self, request: ApprovalRequest) -> Approval: ...


class CallbackApproval:
    """An :class:`ApprovalPolicy` from a plain (sync or async) callback."""

    def __init__(
        self, callback: Callable[[ApprovalRequest], Approval | bool | Awaitable[Approval | bool]]
    ) -> None:
        self._callback = callback

    async def approve(self, request: ApprovalRequest) -> Approval:
        answer = self._callback(request)
        if isinstance(answer, Awaitable):
            answer = await answer
        if isinstance(answer, bool):
            return Approval.ALLOW_ONCE if answer else Approval.DENY
        return answer


def canonical_hash(arguments: Mapping[str, Any]) -> str:
    """A stable digest of an arguments object (key order and spacing do not matter)."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


Key = tuple[tuple[str, ...], str, str]
"""Whose it is (the ``remember`` scope's key of the principal), a tool's name and the hash
of its canonical arguments."""


class SafetyGate:
    """Applies the session kind, the operator's allowances, the remembered approvals and
    the approver."""

    def __init__(
        self,
        auto_approve: Iterable[str] = (),
        policy: ApprovalPolicy | None = None,
        remember: ApprovalScope = ApprovalScope.USER_AGENT,
    ):
        self._auto_approve = frozenset(auto_approve)
        self.policy = policy
        self.remember = remember
        """Whose calls an "always" answer covers."""
        self._always: set[Key] = set()
        self._decided: dict[
            tuple[Principal, str], tuple[str, str | PermissionDeniedError | None]
        ] = {}
        """Answers asked ahead, by principal and call id: the arguments' hash, and how the
        call was let through or why it was refused."""

    def passes(self, tool: Tool) -> bool:
        """Whether every call of ``tool`` passes the gate, unasked and in every session kind
        (a ``read_only`` tool's); :meth:`admit` would return ``None`` for it."""
        return tool.safety_tier is SafetyTier.READ_ONLY

    def needs_approval(self, name: str, tool: Tool) -> bool:
        """Whether a call of ``tool`` waits for an approver (unless remembered)."""
        return tool.safety_tier is SafetyTier.PRIVILEGED and name not in self._auto_approve

    async def admit(
        self, name: str, tool: Tool, arguments: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> str | None:
        """Return how the call was let through (``None``: it needs no approval); raise
        :class:`PermissionDeniedError` otherwise."""
        if ctx.session_kind is SessionKind.WORKER and tool.safety_tier is not SafetyTier.READ_ONLY:
            raise PermissionDeniedError(
                f"Tool {name} is {tool.safety_tier.value}; a worker session runs read_only "
                "tools only",
                details={"required_tier": tool.safety_tier.value, "session_kind": "worker"},
            )
        if tool.safety_tier is not SafetyTier.PRIVILEGED:
            return None
        if name in self._auto_approve:
            return "approval.auto_approve names the tool"
        digest = canonical_hash(arguments)
        decided = self._decided.pop((ctx.principal, ctx.call_id), None) if ctx.call_id else None
        if decided is not None and decided[0] == digest:
            if isinstance(decided[1], PermissionDeniedError):
                raise decided[1]
            return decided[1]
        return await self._ask(
            name, arguments, ctx, (self.remember.key(ctx.principal), name, digest)
        )

    async def decide_ahead(
        self, name: str, tool: Tool, arguments: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> None:
        """Ask now for the call ``ctx.call_id``; :meth:`admit` uses the answer later."""
        answer: str | PermissionDeniedError | None
        try:
            answer = await self.admit(name, tool, arguments, ctx)
        except PermissionDeniedError as exc:
            answer = exc
        self._decided[(ctx.principal, ctx.call_id)] = (canonical_hash(arguments), answer)

    def forget(self, ctx: ToolExecutionContext, call_ids: Iterable[str]) -> None:
        """Drop answers decided ahead that no call used (a hook blocked it, ...)."""
        for call_id in call_ids:
            self._decided.pop((ctx.principal, call_id), None)

    async def _ask(
        self, name: str, arguments: Mapping[str, Any], ctx: ToolExecutionContext, key: Key
    ) -> str:
        if key in self._always:
            return "a standing allowance for these arguments"
        details: dict[str, Any] = {"required_tier": SafetyTier.PRIVILEGED.value}
        if self.policy is None:
            raise PermissionDeniedError(
                f"Tool {name} is privileged and needs approval, but no approver is configured",
                details=details,
            )
        chain = ctx.principal.chain
        channel_id = ctx.send_channel_id
        if ctx.parents:
            links = (*ctx.parents, ctx.link())
            channel_id = next((s.channel_id for s in reversed(links) if s.channel_id), None)
            if channel_id is None:
                raise PermissionDeniedError(
                    f"Tool {name} is privileged and needs approval, but no session in the "
                    f"chain {' > '.join(chain)} has a channel to ask the user on",
                    details={**details, "chain": list(chain)},
                )
        covers = self.remember.describe(ctx.principal)
        request = ApprovalRequest(name, arguments, ctx, channel_id, chain, covers)
        answer = await self.policy.approve(request)
        if answer is Approval.DENY:
            raise PermissionDeniedError(
                f"The user did not approve this call of {name}", details=details
            )
        if answer is Approval.ALLOW_ALWAYS:
            self._always.add(key)
            return "approved, and remembered for these arguments"
        return "approved once"
