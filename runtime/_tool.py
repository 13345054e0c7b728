"""What a tool is: its declaration, its safety tier, the per-call context, and the Protocol.

A tool is declared once, as a :class:`FunctionDecl` in the OpenAI function-calling shape
(name, one-line description, JSON Schema parameters); provider adapters translate it.
Anything with ``schema()``, ``execute()``, ``timeout`` and ``safety_tier`` is a tool: a
host-trusted Python function (see :func:`toolcage.runtime.tool`), a WASI guest, the shell.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

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
    """Observes only. Gets read-only mounts; may run concurrently with its siblings."""
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


class SessionKind(enum.StrEnum):
    """What a session may touch; carried by every call's context.

    The kind is enforced where handles are handed out, not only at the gate: a worker's
    guests are linked without the ``channel`` and state-store bindings and get read-only
    mounts, so a write-capable tool registered for a worker still cannot act.
    """

    MAIN = "main"
    """Everything its agent's tools and the policies allow; sends on its own channel."""
    WORKER = "worker"
    """Read-only by design: only ``read_only`` tools run, with no channel, no state store
    and read-only mounts."""
    BRANCH = "branch"
    """Like ``main``, but sends on its parent's channel (a delegated agent, by default)."""


@dataclass(frozen=True, slots=True)
class SessionLink:
    """A session a call runs beneath: one link of a chain of delegated turns."""

    agent_id: str
    """The agent that session runs as."""
    session_id: str
    """Its conversation."""
    channel_id: str | None
    """Where its messages go (``None``: it has no channel, e.g. a worker)."""


@dataclass(frozen=True, slots=True)
class ToolExecutionContext:
    """Who is calling and what the turn carries; immutable for the duration of a call."""

    user_id: str = "local"
    """The end user on whose behalf the model acts."""
    session_id: str = "default"
    """The conversation; truncated outputs are readable only from the same session."""
    agent_id: str = "default"
    """Which agent profile (decides the enabled tool set)."""
    channel_id: str | None = None
    """The channel the turn came from (chat room, thread, ...), if any."""
    thread_id: str | None = None
    """The thread within the channel, if any."""
    attachments: tuple[Attachment, ...] = ()
    """Files attached to the current turn."""
    progress: ProgressCallback = _ignore_progress
    """Called by tools to report progress; the pipeline turns it into events."""
    call_id: str = ""
    """Id of the current tool call (set by the pipeline)."""
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Free-form host data, read-only."""
    delegation_depth: int = 0
    """How many ``delegate_to_agent`` turns this call runs beneath (0: the host's own turn)."""
    session_kind: SessionKind = SessionKind.MAIN
    """What this session may touch (see :class:`SessionKind`)."""
    parents: tuple[SessionLink, ...] = ()
    """The sessions this one runs beneath, the host's own first (empty: a top-level one)."""

    @property
    def send_channel_id(self) -> str | None:
        """Where this session's messages go: its own channel (``main``), its parent's
        (``branch``), none (``worker``)."""
        if self.session_kind is SessionKind.MAIN:
            return self.channel_id
        if self.session_kind is SessionKind.BRANCH:
            return self.parents[-1].channel_id if self.parents else self.channel_id
        return None

    def link(self) -> SessionLink:
        """This session as a link of its children's chain."""
        return SessionLink(self.agent_id, self.session_id, self.send_channel_id)

    def child(self, kind: SessionKind, *, agent_id: str, session_id: str) -> ToolExecutionContext:
        """The context of a session run beneath this one (a delegated agent's turn): same
        user and channel, no attachments, one level deeper."""
        return ToolExecutionContext(
            self.user_id,
            session_id,
            agent_id,
            self.channel_id,
            self.thread_id,
            (),
            self.progress,
            "",
            self.metadata,
            self.delegation_depth + 1,
            kind,
            (*self.parents, self.link()),
        )

    def for_call(self, call_id: str, progress: ProgressCallback) -> ToolExecutionContext:
        """This context for one call (``dataclasses.replace``, without its per-call cost)."""
        return ToolExecutionContext(
            self.user_id,
            self.session_id,
            self.agent_id,
            self.channel_id,
            self.thread_id,
            self.attachments,
            progress,
            call_id,
            self.metadata,
            self.delegation_depth,
            self.session_kind,
            self.parents,
        )


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A model's request to run a tool."""

    name: str
    """The tool's name as the model wrote it."""
    arguments: Mapping[str, Any] | str
    """The arguments object, or its JSON text as some providers send it."""
    id: str = ""
    """The provider's call id, kept so the result can be matched to the call."""


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
