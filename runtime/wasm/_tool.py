"""A WASI guest as a :class:`~toolcage.runtime.abc.Tool` (its declaration: :mod:`._spec`).

Each guest tool is declared by ``wasm_tools/tools/NAME.json`` next to its C source::

    {"name": "file_read", "description": "...", "parameters": {...JSON Schema...},
     "safety_tier": "read_only", "timeout": 10,
     "path_arguments": {"path": "read"}, "needs": ["fs"]}

``path_arguments`` tells the path policy which arguments are paths and in which mode; by the
time :meth:`WasmTool.execute` runs they are canonical guest paths. ``needs`` lists what the
tool uses: host-binding capabilities (``fs``, ``http``, ``clock``, ...) are linked when
granted, and the call's mounts -- its principal's, where a host directory names the
principal -- reach the ``fs`` and ``vault`` bindings through its :class:`CallState`;
``mounts`` (the granted mounts as WASI preopens, for tools that write) and ``attachments``
are not bindings (the attachments of the turn are added to the guest's arguments document
under ``_attachments``, base64-encoded). A tool that changes a file declares it under
``replaces`` and has it replaced atomically (:mod:`._commit`). A tool that is one host call
and nothing else names it, ``"relay": "memory.save"``, and has no C file: it runs the shared
relay guest (``modules/relay.wasm``), linked with that one call of the granted binding
(:class:`~toolcage.host_bindings._relay.RelayBinding`) besides WASI. A tool granted ``channel``
sends the media its guest handed over to the runtime's :class:`Channel` once the guest has
succeeded (see :mod:`toolcage.host_bindings._channel`), on the session's channel
(:attr:`~toolcage.runtime.ToolExecutionContext.send_channel_id`: a branch's parent's).

In a ``worker`` session a guest is linked only with the bindings a worker may have
(:func:`~toolcage.host_bindings.for_worker`) and gets its mounts read-only, whatever its
tier: a write-capable guest cannot act there; one importing a withheld binding is refused
(``permission_denied``) before it starts.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio
from toolcage.host_bindings import (
    CallState,
    Channel,
    ChannelMessage,
    HostBinding,
    MediaBinding,
    MessageKind,
    for_worker,
    media_message,
    text_messages,
)
from toolcage.host_bindings._relay import unwrapped
from toolcage.policies import GrantedMount, MountError, MountPolicy, SessionKind

from .._deadline import CallDeadline, current_deadline
from .._errors import PermissionDeniedError, ToolExecutionError
from .._observe import current_trace
from .._result import ToolResult
from .._tool import ProgressUpdate, SafetyTier, ToolExecutionContext
from ._link import LinkError
from ._runner import GuestLimits, WasmToolRunner
from ._spec import DeclaredTool, WasmToolSpec

_guest_log = logging.getLogger("toolcage.wasm")

INLINE_BINDINGS = frozenset({"fs", "clock", "log"})
"""Host bindings that answer without waiting on anything but local files."""


class WasmTool(DeclaredTool):
    """A guest tool, run by a :class:`WasmToolRunner` with the mounts its policy grants."""

    def __init__(
        self,
        spec: WasmToolSpec,
        runner: WasmToolRunner,
        mounts: MountPolicy,
        *,
        bindings: Sequence[HostBinding] = (),
        limits: GuestLimits | None = None,
        channel: Channel | None = None,
    ) -> None:
        self.spec = spec
        self.runner = runner
        self.mounts = mounts
        self.bindings = tuple(bindings)
        self.limits = GuestLimits(timeout=spec.timeout) if limits is None else limits
        self.channel = channel
        self._outbox = next(
            (b for b in map(unwrapped, self.bindings) if isinstance(b, MediaBinding)), None
        )
        self._worker_bindings = for_worker(self.bindings)
        # Preopens cost every call; a tool that reads through ``fs`` does without them.
        self._preopens = "mounts" in spec.needs
        # A read-only guest whose host calls never wait on the network may start on the
        # event loop's thread (see WasmToolRunner.run).
        self._inline = spec.safety_tier is SafetyTier.READ_ONLY and all(
            b.name in INLINE_BINDINGS for b in self.bindings
        )
        # ... and such a guest that needs nothing else may finish with no task at all.
        self._now = (
            self._inline and not self._preopens and self._outbox is None and not spec.replaces
        )

    def execute_now(
        self, args: Mapping[str, Any], ctx: ToolExecutionContext, deadline: CallDeadline
    ) -> ToolResult | None:
        """Run the guest on the calling thread, when it can finish there: its result (or its
        ToolError); None when it did not run to its end here -- :meth:`execute` runs it then.

        The pipeline calls this first, with the call's ``deadline``, and runs no task for a
        call it finishes (see :meth:`WasmToolRunner.run_now`): only a read-only guest whose
        host calls never wait, that needs no preopens, sends nothing and replaces no file.
        """
        if not self._now:
            return None
        worker = ctx.session_kind is SessionKind.WORKER
        mounts, bindings = self._grants(ctx, worker)
        state = self._state(ctx, mounts, bindings, min(deadline.at, _deadline(self.timeout)))
        try:
            return self.runner.run_now(
                self.name,
                self._arguments(args, ctx),
                self.limits,
                bindings=bindings,
                state=state,
                deadline=deadline,
            )
        except LinkError as exc:
            raise self._refused(exc, worker) from exc

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        """Run the guest once with the ``args`` document."""
        worker = ctx.session_kind is SessionKind.WORKER
        if self._outbox is not None and self.channel is None and not worker:
            raise ToolExecutionError(
                f"{self.name} cannot send anything: no channel is connected to this runtime "
                "(the host passes one to Runtime.from_config(channel=...))"
            )
        mounts, bindings = self._grants(ctx, worker)
        channel_id = ctx.send_channel_id
        replacement = None
        if self.spec.replaces is not None:
            replacement = self.spec.replaces.prepare(args, mounts)
        state = self._state(ctx, mounts, bindings, _deadline(self.limits.timeout))
        try:
            document = self._document(args, ctx)
            if replacement is not None:
                document.update(replacement.create())  # removed by discard, below
            result = await self.runner.run(
                self.name,
                _encoded(document),
                mounts if self._preopens else (),
                self.limits,
                bindings=bindings,
                state=state,
                inline=self._inline,
            )
            if replacement is not None:
                replacement.commit()  # no await since the guest returned: see _commit
            if self._outbox is not None and self.channel is not None and state is not None:
                outgoing = self._outbox.take(state)
                if outgoing and not result.is_error:
                    for message in text_messages(ctx.user_id, channel_id, outgoing):
                        await _send(self.channel, message)
                    media = media_message(ctx.user_id, channel_id, outgoing)
                    if media is not None:
                        await _send(self.channel, media)
            return result
        except LinkError as exc:
            raise self._refused(exc, worker) from exc
        finally:
            if replacement is not None:
                replacement.discard()
            if self._outbox is not None and state is not None:
                self._outbox.take(state)  # what a failed guest handed over is not sent

    def _grants(
        self, ctx: ToolExecutionContext, worker: bool
    ) -> tuple[tuple[GrantedMount, ...], tuple[HostBinding, ...]]:
        """The call's mounts (its principal's) and bindings: read-only mounts and the
        bindings a worker may have in a worker session."""
        try:
            mounts = self.mounts.mounts_for(self.name, self.safety_tier.value, ctx.principal)
        except MountError as exc:
            raise ToolExecutionError(f"the mounts are misconfigured: {exc}") from exc
        if worker:
            mounts = tuple(replace(m, writable=False) if m.writable else m for m in mounts)
            return mounts, self._worker_bindings
        return mounts, self.bindings

    def _state(
        self,
        ctx: ToolExecutionContext,
        mounts: tuple[GrantedMount, ...],
        bindings: tuple[HostBinding, ...],
        deadline: float,
    ) -> CallState | None:
        """What the host functions of one call see (None when the guest has no bindings)."""
        if not bindings:
            return None
        return call_state(self.name, self.limits, ctx, mounts, deadline)

    def _document(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> dict[str, Any]:
        """The guest's arguments document: ``args``, and the turn's attachments if needed."""
        document = dict(args)
        if "attachments" in self.spec.needs:
            document["_attachments"] = [
                {
                    "name": a.name,
                    "mime_type": a.mime_type,
                    "data": base64.b64encode(a.data).decode("ascii"),
                }
                for a in ctx.attachments
            ]
        return document

    def _arguments(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> bytes:
        return _encoded(self._document(args, ctx))

    def _refused(self, exc: LinkError, worker: bool) -> PermissionDeniedError:
        """The error of a call whose guest imports a binding it is not granted."""
        if worker:
            return PermissionDeniedError(
                f"{self.name} cannot run in a worker session, which only reads (files, "
                f"the user's notes, the web): {exc}",
                details={"session_kind": SessionKind.WORKER.value},
            )
        # The operator took a capability away ([egress.grants]): the tool cannot run.
        return PermissionDeniedError(str(exc))


def _encoded(document: dict[str, Any]) -> bytes:
    # ASCII JSON: a lone surrogate in a string cannot break the UTF-8 of argv.
    return json.dumps(document).encode()


async def _send(channel: Channel, message: ChannelMessage) -> None:
    """Send the media a guest handed over to the call's channel."""
    try:
        await channel.send(message)
    except Exception as exc:  # the embedder's connector: any failure is the call's
        what = (
            "the message"
            if message.kind is MessageKind.MESSAGE
            else message.text.removeprefix("sent ")
        )
        raise ToolExecutionError(
            f"the channel could not send {what}: {type(exc).__name__}: {exc}"
        ) from exc


def call_state(
    name: str,
    limits: GuestLimits,
    ctx: ToolExecutionContext,
    mounts: tuple[GrantedMount, ...],
    deadline: float,
) -> CallState:
    """What the host functions of one call of guest tool ``name`` see: its principal,
    mounts and deadline, its progress and log lines, and the trace's decisions."""
    return CallState(
        tool_name=name,
        deadline=deadline,
        progress=lambda message, fraction: _progress(ctx, message, fraction),
        log=lambda level, message: _log_line(name, level, message),
        mounts=mounts,
        principal=ctx.principal,
        reply_bytes=limits.reply_bytes,
        decide=None if (trace := current_trace()) is None else trace.decide,
    )


def _log_line(tool: str, level: str, message: str) -> None:
    """A guest's log line on the ``toolcage.wasm`` logger, tagged with the tool's name."""
    number = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    _guest_log.log(number, "%s: %s", tool, message, extra={"event": "guest.log", "tool": tool})


def _deadline(timeout: float) -> float:
    """The guest's deadline: its own timeout, or the call's deadline when that is earlier."""
    at = time.monotonic() + timeout
    call = current_deadline()
    return at if call is None else min(at, call.at)


def _progress(ctx: ToolExecutionContext, message: str, fraction: float | None) -> None:
    # Host functions run in the guest's worker thread; progress callbacks belong to the loop.
    update = ProgressUpdate(message, fraction)
    try:
        anyio.from_thread.run_sync(ctx.progress, update)
    except RuntimeError:  # not in an anyio worker thread (run_sync callers)
        ctx.progress(update)
