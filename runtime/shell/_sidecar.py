"""The shell sidecar as the shell tools reach it: :class:`SidecarHandle` starts the client
on first use, :func:`call_sidecar` asks it with a deadline and turns its failures into
the envelope's errors, and :func:`session_key` names a principal's shell session."""

from __future__ import annotations

import hashlib
from contextlib import AsyncExitStack
from typing import Any

import anyio
from toolcage.sidecar import (
    POLICY_REFUSED,
    SidecarClient,
    SidecarClosed,
    SidecarError,
    SidecarLost,
    SidecarUnavailable,
)

from .._errors import (
    PermissionDeniedError,
    ToolCancelledError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
    ToolValidationError,
)
from .._tool import ToolExecutionContext

ANSWER_GRACE = 5.0
"""Seconds beyond a command's timeout to wait for the sidecar's answer before giving up."""
SESSION_PATTERN = "^[A-Za-z0-9_.-]{1,64}$"
"""What a ``session_id`` may be: the sidecar's own rule for session names."""


class SidecarHandle:
    """The sidecar client, entered into the runtime's exit stack when first used.

    A runtime that never runs a command never starts the daemon and holds nothing to close.
    """

    def __init__(self, client: SidecarClient, stack: AsyncExitStack | None = None) -> None:
        self.client = client
        self._stack = stack

    async def request(self, op: str, **arguments: Any) -> dict[str, Any]:
        if self._stack is not None:
            self._stack.push_async_callback(self.client.aclose)
            self._stack = None
        return await self.client.request(op, **arguments)

    async def check_health(self) -> None:
        """After a request went unanswered: restart the daemon if it is wedged."""
        with anyio.CancelScope(shield=True):
            await self.client.check_health()


def session_key(ctx: ToolExecutionContext, session_id: object) -> str:
    """The sidecar session of this principal's ``session_id``: its user, agent and
    conversation, joined so that no two principals share one."""
    key = ctx.principal.key(str(session_id or "default"))
    if len(key.encode()) > 200:  # the sidecar takes names up to 256 bytes
        key = "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    return key


async def call_sidecar(
    sidecar: SidecarHandle, op: str, request: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """One request, its failures mapped onto the error tree (the one place they are).

    ``seconds`` is how long the request itself may take; the sidecar gets some grace on
    top before the call gives up on it, so that even a stopped daemon cannot hang a call.
    """
    try:
        with anyio.fail_after(seconds + ANSWER_GRACE):
            return await sidecar.request(op, **request)
    except TimeoutError:
        await sidecar.check_health()
        raise ToolTimeoutError(
            f"the shell sidecar did not answer within {seconds + ANSWER_GRACE:g} s",
            details={"timeout": seconds + ANSWER_GRACE},
        ) from None
    except SidecarUnavailable as exc:
        raise ToolExecutionError(f"the shell is unavailable: {exc}") from None
    except SidecarClosed as exc:
        raise ToolCancelledError(f"the runtime is closed: {exc}") from None
    except SidecarLost as exc:
        raise ToolExecutionError(f"the shell command was lost: {exc}") from None
    except SidecarError as exc:
        if exc.code == POLICY_REFUSED:
            raise PermissionDeniedError(f"Shell policy {exc.message}", field="command") from None
        error: type[ToolError] = (
            ToolValidationError if exc.code in ("bad_request", "no_job") else ToolExecutionError
        )
        raise error(f"the shell refused: {exc.message}") from None
