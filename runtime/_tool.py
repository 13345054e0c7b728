"""What a tool is: its declaration, its safety tier, the per-call context, and the Protocol.

A tool is declared once, as a :class:`FunctionDecl` in the OpenAI function-calling shape
(name, one-line description, JSON Schema parameters); provider adapters translate it.
Anything with ``schema()``, ``execute()``, ``timeout`` and ``safety_tier`` is a tool: a
host-trusted Python function (see :func:`toolcage.runtime.tool`), a WASI guest, the shell.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from toolcage.policies import Principal, SessionKind, SessionLink

from ._result import ToolResult

TOOL_NAME_MAX = 64
"""The longest tool name OpenAI, Anthropic and Gemini all accept."""

TOOL_NAME = re.compile(
    rf"^(?=.{{1,{TOOL_NAME_MAX}}}$)[a-z][a-z0-9]*(?:_[a-z0-9]+)*(?:__[a-z0-9]+(?:_[a-z0-9]+)*)?$"
)
"""snake_case: lower-case words joined by single underscores, at most 64 characters; one
double underscore may separate an MCP server's name from its tool's (``SERVER__TOOL``)."""


class SafetyTier(enum.StrEnum):
    """How much harm a tool can do; decides approval and mount modes."""

    READ_ONLY = "read_only"
    """Observes only: files, the user's notes, and the network by a *network read* -- a
    ``GET`` or ``HEAD`` without a body, through the egress policy and the rate limits (so
    ``web_fetch`` and ``web_search`` are read_only; ``http_request``, whose method, headers
    and body are the caller's, is not). Gets read-only mounts; may run concurrently with
    its siblings; the only tier a worker session runs."""
    SIDE_EFFECTING = "side_effecting"
    """Changes files or the outside world within what its policy grants."""
    PRIVILEGED = "privileged"
    """Needs approval (or an operator's standing allowance) for every call."""


@dataclass(frozen=True, slots=True)
class FunctionDecl:
    """A tool's declaration, as models see it."""

    name: str
    """Unique snake_case name."""
    description: str
    """What the tool does and when to use it; its first line is the summary listings show."""
    parameters: Mapping[str, Any]
    """JSON Schema of the arguments object (``{"type": "object", "properties": ...}``)."""

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI function-calling shape: ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file the user attached to the current turn."""

    name: str
    """The file name the user gave it (never trusted as a path)."""
    mime_type: str
    """Declared media type."""
    data: bytes = field(repr=False)
    """The raw bytes."""


@dataclass(frozen=True, slots=True)
class ProgressUpdate:
    """A progress report from a running tool."""

    message: str
    """What the tool is doing now."""
    fraction: float | None = None
    """How far along it is, 0.0 to 1.0, when it knows."""


ProgressCallback = Callable[[ProgressUpdate], None]


def _ignore_progress(update: ProgressUpdate) -> None:
    del update


_UNSET: Any = object()


@dataclass(frozen=True, slots=True, init=False)
class ToolExecutionContext:
    """Who is calling and what the turn carries; immutable for the duration of a call.

    Who is calling is one :class:`~toolcage.policies.Principal`; build the context from one,
    or from its parts, which are checked once, here::

        ToolExecutionContext(user_id="ada", session_id="chat-1", agent_id="reviewer")
        ToolExecutionContext(principal=Principal("ada", "reviewer", "chat-1"))

    (the parts given beside a ``principal`` replace its own, as ``dataclasses.replace``
    does). A bad id raises :class:`~toolcage.policies.PrincipalError` naming it.
    """

    principal: Principal
    """Who the call belongs to: user, agent, session, session kind, channel, chain."""
    thread_id: str | None
    """The thread within the channel, if any."""
    attachments: tuple[Attachment, ...]
    """Files attached to the current turn."""
    progress: ProgressCallback
    """Called by tools to report progress; the pipeline turns it into events."""
    call_id: str
    """Id of the current tool call (set by the pipeline)."""
    metadata: Mapping[str, str]
    """Free-form host data, read-only."""

    def __init__(
        self,
        *,
        principal: Principal | None = None,
        user_id: str = _UNSET,
        session_id: str = _UNSET,
        agent_id: str = _UNSET,
        channel_id: str | None = _UNSET,
        session_kind: SessionKind = _UNSET,
        parents: tuple[SessionLink, ...] = _UNSET,
        delegation_depth: int = _UNSET,
        thread_id: str | None = None,
        attachments: tuple[Attachment, ...] = (),
        progress: ProgressCallback = _ignore_progress,
        call_id: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        parts: dict[str, Any] = {
            name: value
            for name, value in (
                ("user_id", user_id),
                ("session_id", session_id),
                ("agent_id", agent_id),
                ("channel_id", channel_id),
                ("session_kind", session_kind),
                ("parents", parents),
                ("delegation_depth", delegation_depth),
            )
            if value is not _UNSET
        }
        if principal is None:
            principal = Principal(**parts)
        elif parts:
            principal = dataclasses.replace(principal, **parts)
        elif not isinstance(principal, Principal):
            raise TypeError(f"principal must be a Principal, got {type(principal).__name__}")
        shown = _NO_METADATA if not metadata else MappingProxyType(dict(metadata))
        _fill(self, principal, thread_id, tuple(attachments), progress, call_id, shown)

    @property
    def user_id(self) -> str:
        """The principal's end user."""
        return self.principal.user_id

    @property
    def session_id(self) -> str:
        """The principal's conversation; truncated outputs are readable only from it."""
        return self.principal.session_id

    @property
    def agent_id(self) -> str:
        """The principal's agent profile (decides the enabled tool set)."""
        return self.principal.agent_id

    @property
    def channel_id(self) -> str | None:
        """The channel the turn came from, if any."""
        return self.principal.channel_id

    @property
    def session_kind(self) -> SessionKind:
        """What this session may touch."""
        return self.principal.session_kind

    @property
    def parents(self) -> tuple[SessionLink, ...]:
        """The sessions this one runs beneath, the host's own first."""
        return self.principal.parents

    @property
    def delegation_depth(self) -> int:
        """How many ``delegate_to_agent`` turns this call runs beneath."""
        return self.principal.delegation_depth

    @property
    def send_channel_id(self) -> str | None:
        """Where this session's messages go (see :attr:`Principal.send_channel_id`)."""
        return self.principal.send_channel_id

    def link(self) -> SessionLink:
        """This session as a link of its children's chain."""
        return self.principal.link()

    def child(self, kind: SessionKind, *, agent_id: str, session_id: str) -> ToolExecutionContext:
        """The context of a session run beneath this one (a delegated agent's turn): the
        principal's child, the same thread and metadata, no attachments."""
        return _context(
            self.principal.child(kind, agent_id=agent_id, session_id=session_id),
            self.thread_id,
            (),
            self.progress,
            "",
            self.metadata,
        )

    def for_call(self, call_id: str, progress: ProgressCallback) -> ToolExecutionContext:
        """This context for one call (``dataclasses.replace``, without its per-call cost)."""
        return _context(
            self.principal, self.thread_id, self.attachments, progress, call_id, self.metadata
        )


_NO_METADATA: Mapping[str, str] = MappingProxyType({})


def _context(
    principal: Principal,
    thread_id: str | None,
    attachments: tuple[Attachment, ...],
    progress: ProgressCallback,
    call_id: str,
    metadata: Mapping[str, str],
) -> ToolExecutionContext:
    """A context from checked parts, without the constructor's checks."""
    ctx = object.__new__(ToolExecutionContext)
    _fill(ctx, principal, thread_id, attachments, progress, call_id, metadata)
    return ctx


def _fill(
    ctx: ToolExecutionContext,
    principal: Principal,
    thread_id: str | None,
    attachments: tuple[Attachment, ...],
    progress: ProgressCallback,
    call_id: str,
    metadata: Mapping[str, str],
) -> None:
    """Set the fields of a frozen context being made."""
    setattr_ = object.__setattr__
    setattr_(ctx, "principal", principal)
    setattr_(ctx, "thread_id", thread_id)
    setattr_(ctx, "attachments", attachments)
    setattr_(ctx, "progress", progress)
    setattr_(ctx, "call_id", call_id)
    setattr_(ctx, "metadata", metadata)


DEFAULT_CONTEXT = ToolExecutionContext()
"""The context of a call made without one: the default principal, no attachments."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run a tool."""

    name: str
    """The tool's name as the model wrote it."""
    arguments: Mapping[str, Any] | str
    """The arguments object, or its JSON text as some providers send it."""
    id: str = ""
    """The provider's call id, kept so the result can be matched to the call."""


_call_ids = itertools.count(secrets.randbits(64))


def new_call_id() -> str:
    """An id for a call made without one: ``call_`` and 16 hex digits.

    The digits count up from a random point drawn once per process: unique within the
    process, unlikely to meet another process's, and without drawing random bytes (a system
    call) on every call.
    """
    return f"call_{next(_call_ids) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


@runtime_checkable
class Tool(Protocol):
    """Anything that can be called as a tool."""

    @property
    def timeout(self) -> float:
        """Seconds a call may take before it is stopped."""
        ...

    @property
    def safety_tier(self) -> SafetyTier:
        """See :class:`SafetyTier`."""
        ...

    def schema(self) -> FunctionDecl:
        """The tool's declaration."""
        ...

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        """Run with validated arguments; raise a :class:`ToolError` to fail."""
        ...


@runtime_checkable
class DeclaresNeeds(Protocol):
    """Optional: a tool that says what it needs (mounts, network, sidecar, ...), for listings."""

    @property
    def needs(self) -> tuple[str, ...]: ...
