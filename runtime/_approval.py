"""The safety gate: who says yes to a privileged call.

``privileged`` tools run only when the operator allows them outright (config
``approval.auto_approve``) or an :class:`ApprovalPolicy` approves the call. An approver may
answer "always"; that standing allowance is remembered for the tool *and a hash of its
canonical arguments*, never for the tool or the program alone, so approving ``ls -la``
once does not approve ``rm -rf ~``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

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
    arguments: Mapping[str, Any]
    context: ToolExecutionContext


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


class SafetyGate:
    """Applies the operator's allowances, the remembered approvals and the approver."""

    def __init__(self, auto_approve: Iterable[str] = (), policy: ApprovalPolicy | None = None):
        self._auto_approve = frozenset(auto_approve)
        self.policy = policy
        self._always: set[tuple[str, str]] = set()

    async def admit(
        self, name: str, tool: Tool, arguments: Mapping[str, Any], ctx: ToolExecutionContext
    ) -> str | None:
        """Return how the call was let through (``None``: it needs no approval); raise
        :class:`PermissionDeniedError` otherwise."""
        if tool.safety_tier is not SafetyTier.PRIVILEGED:
            return None
        if name in self._auto_approve:
            return "approval.auto_approve names the tool"
        key = (name, canonical_hash(arguments))
        if key in self._always:
            return "a standing allowance for these arguments"
        if self.policy is None:
            raise PermissionDeniedError(
                f"Tool {name} is privileged and needs approval, but no approver is configured"
            )
        answer = await self.policy.approve(ApprovalRequest(name, arguments, ctx))
        if answer is Approval.DENY:
            raise PermissionDeniedError(f"The user did not approve this call of {name}")
        if answer is Approval.ALLOW_ALWAYS:
            self._always.add(key)
            return "approved, and remembered for these arguments"
        return "approved once"
