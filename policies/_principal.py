"""Who a call belongs to: the :class:`Principal`, one value from the embedder to every
decision and every stored object.

A principal is the user, the agent profile, the session and its kind, the channel and the
chain of sessions it runs beneath. The embedder builds it once (a
``ToolExecutionContext``), and it travels unchanged: the safety gate remembers approvals
under it, the state store and the scheduler file what they keep under it, a schedule
stores it whole and its turns run as exactly that principal again, the output store, the
rate limits, the shell sidecar and the audit log key their entries by it. Nothing below
the embedder rebuilds one from loose ids.

Ids are text the embedder chose, so they are checked once, here: not empty, at most
:data:`MAX_ID_CHARS` characters, no control characters. Any other text is an id, including
one that looks like a path, SQL or a search expression: every statement binds it as a
value, and :func:`path_segment` is the only way one becomes part of a file name.
"""

from __future__ import annotations

import enum
import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_ID_CHARS = 256
"""The longest user, agent, session or channel id a principal accepts."""
MAX_CHAIN = 64
"""The most sessions a principal may run beneath (a delegation chain far deeper than any
``[delegation] max_depth``)."""


class SessionKind(enum.StrEnum):
    """What a session may touch; carried by every call's principal.

    The kind is enforced where handles are handed out, not only at the gate: a worker's
    guests are linked without the ``channel``, scratchpad, vault and scheduler bindings,
    with read-only forms of ``memory`` (search alone) and ``http`` (``GET``/``HEAD``
    without a body), and get read-only mounts, so a write-capable tool registered for a
    worker still cannot act.
    """

    MAIN = "main"
    """Everything its agent's tools and the policies allow; sends on its own channel."""
    WORKER = "worker"
    """Read-only by design, for research: only ``read_only`` tools run (reading files,
    searching the user's notes, searching and fetching the web), with no channel, no
    writes to the state store and read-only mounts."""
    BRANCH = "branch"
    """Like ``main``, but sends on its parent's channel (a delegated agent, by default)."""


class PrincipalError(ValueError):
    """An id a principal cannot hold; the message names the field, the rule and the size."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def check_id(field: str, value: object, *, optional: bool = False) -> None:
    """Raise :class:`PrincipalError` unless ``value`` is a usable id (``None`` too when
    ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise PrincipalError(field, f"must be a string, got {type(value).__name__}")
    if not value:
        raise PrincipalError(field, "is empty")
    if len(value) > MAX_ID_CHARS:
        raise PrincipalError(
            field,
            f"is {len(value):,} characters long; the limit is {MAX_ID_CHARS} "
            f"(starts {value[:24]!r})",
        )
    if not value.isprintable():
        bad = next(c for c in value if not c.isprintable())
        raise PrincipalError(
            field,
            f"holds U+{ord(bad):04X} ({unicodedata.category(bad)}); ids are printable text "
            "(no control, separator or formatting characters)",
        )


@dataclass(frozen=True, slots=True)
class SessionLink:
    """A session a call runs beneath: one link of a chain of delegated turns."""

    agent_id: str
    """The agent that session runs as."""
    session_id: str
    """Its conversation."""
    channel_id: str | None
    """Where its messages go (``None``: it has no channel, e.g. a worker)."""

    def __post_init__(self) -> None:
        check_id("agent_id", self.agent_id)
        check_id("session_id", self.session_id)
        check_id("channel_id", self.channel_id, optional=True)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a call belongs to: checked when built, never changed, never rebuilt from parts.

    >>> ada = Principal(user_id="ada", agent_id="reviewer", session_id="chat-1")
    >>> ada.child(SessionKind.WORKER, agent_id="researcher", session_id="chat-1/researcher")
    ... # doctest: +SKIP
    """

    user_id: str = "local"
    """The end user on whose behalf the model acts."""
    agent_id: str = "default"
    """The agent profile (decides the enabled tools, vault grants, rate-limit keys)."""
    session_id: str = "default"
    """The conversation: its scratchpad, truncated outputs and shell sessions."""
    session_kind: SessionKind = SessionKind.MAIN
    """What this session may touch (see :class:`SessionKind`)."""
    channel_id: str | None = None
    """The channel the session came from (chat room, thread, ...), if any."""
    parents: tuple[SessionLink, ...] = ()
    """The sessions this one runs beneath, the host's own first (empty: a top-level one)."""
    delegation_depth: int = 0
    """How many delegated turns this session runs beneath (0: the host's own turn)."""

    def __post_init__(self) -> None:
        check_id("user_id", self.user_id)
        check_id("agent_id", self.agent_id)
        check_id("session_id", self.session_id)
        check_id("channel_id", self.channel_id, optional=True)
        if not isinstance(self.session_kind, SessionKind):
            object.__setattr__(self, "session_kind", _kind(self.session_kind))
        if type(self.parents) is not tuple or not all(
            isinstance(link, SessionLink) for link in self.parents
        ):
            raise PrincipalError("parents", "must be a tuple of SessionLink")
        if len(self.parents) > MAX_CHAIN:
            raise PrincipalError(
                "parents", f"holds {len(self.parents)} sessions; the limit is {MAX_CHAIN}"
            )
        depth = self.delegation_depth
        if type(depth) is not int or not 0 <= depth <= MAX_CHAIN:
            raise PrincipalError(
                "delegation_depth", f"must be an integer from 0 to {MAX_CHAIN}, got {depth!r}"
            )

    @property
    def send_channel_id(self) -> str | None:
        """Where this session's messages go: its own channel (``main``), its parent's
        (``branch``), none (``worker``)."""
        if self.session_kind is SessionKind.MAIN:
            return self.channel_id
        if self.session_kind is SessionKind.BRANCH:
            return self.parents[-1].channel_id if self.parents else self.channel_id
        return None

    @property
    def chain(self) -> tuple[str, ...]:
        """The agents from the host's own turn down to this one."""
        return (*(link.agent_id for link in self.parents), self.agent_id)

    def link(self) -> SessionLink:
        """This session as a link of its children's chain."""
        return SessionLink(self.agent_id, self.session_id, self.send_channel_id)

    def child(self, kind: SessionKind, *, agent_id: str, session_id: str) -> Principal:
        """The principal of a session run beneath this one (a delegated agent's turn): the
        same user and channel, one level deeper."""
        return Principal(
            self.user_id,
            agent_id,
            session_id,
            kind,
            self.channel_id,
            (*self.parents, self.link()),
            self.delegation_depth + 1,
        )

    def in_session(self, session_id: str) -> Principal:
        """This principal in another conversation of its own (a scheduled run's)."""
        return Principal(
            self.user_id,
            self.agent_id,
            session_id,
            self.session_kind,
            self.channel_id,
            self.parents,
            self.delegation_depth,
        )

    def key(self, *more: str) -> str:
        """A text unique to this user, agent and session and the ``more`` that follow (no
        two principals that differ in one of them share it), for keys kept as text."""
        return json.dumps([self.user_id, self.agent_id, self.session_id, *more])

    def to_record(self) -> dict[str, Any]:
        """The principal as JSON-ready data (:meth:`from_record` reads it back)."""
        return {
            "user_id": self.user_id,
            "agent_id": self.agent_id,
            "session_id": self.session_id,
            "session_kind": self.session_kind.value,
            "channel_id": self.channel_id,
            "parents": [[link.agent_id, link.session_id, link.channel_id] for link in self.parents],
            "delegation_depth": self.delegation_depth,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Principal:
        """The principal :meth:`to_record` wrote; :class:`PrincipalError` for anything else."""
        try:
            parents = tuple(SessionLink(*link) for link in record.get("parents", ()))
            return cls(
                record["user_id"],
                record["agent_id"],
                record["session_id"],
                _kind(record["session_kind"]),
                record.get("channel_id"),
                parents,
                record.get("delegation_depth", len(parents)),
            )
        except (KeyError, TypeError) as exc:
            raise PrincipalError("principal", f"is not a stored principal ({exc})") from None


def _kind(value: object) -> SessionKind:
    if isinstance(value, str) and value in _KINDS:
        return SessionKind(value)
    kinds = ", ".join(_KINDS)
    raise PrincipalError("session_kind", f"must be one of {kinds}, got {value!r:.40}")


_KINDS = tuple(kind.value for kind in SessionKind)


class ApprovalScope(enum.StrEnum):
    """Whose calls an approver's "always" answer covers (``[approval] remember``)."""

    SESSION = "session"
    """The same user, agent and session."""
    USER_AGENT = "user_agent"
    """The same user and agent, in any of their sessions (the default)."""
    USER = "user"
    """The same user, through any agent."""
    RUNTIME = "runtime"
    """Every user and agent of the runtime."""

    def key(self, principal: Principal) -> tuple[str, ...]:
        """What two principals must share for an answer to one to cover the other."""
        if self is ApprovalScope.SESSION:
            return (principal.user_id, principal.agent_id, principal.session_id)
        if self is ApprovalScope.USER_AGENT:
            return (principal.user_id, principal.agent_id)
        if self is ApprovalScope.USER:
            return (principal.user_id,)
        return ()

    def describe(self, principal: Principal) -> str:
        """Whose later calls an "always" for ``principal`` covers, for the approver."""
        user, agent = principal.user_id, principal.agent_id
        if self is ApprovalScope.SESSION:
            return f"user {user!r}, agent {agent!r}, session {principal.session_id!r}"
        if self is ApprovalScope.USER_AGENT:
            return f"user {user!r} and agent {agent!r}, in any session"
        if self is ApprovalScope.USER:
            return f"user {user!r}, through any agent"
        return "every user and agent of this runtime"


SEGMENT_MAX = 96
"""The longest file name :func:`path_segment` makes before it shortens with a digest."""


def path_segment(value: str) -> str:
    """``value`` as one safe file name: letters, digits, ``-`` and ``_`` kept, every other
    character ``%XX``-escaped (UTF-8), so no id is ``.``, ``..``, holds a ``/`` or equals
    another id's segment; one longer than :data:`SEGMENT_MAX` is cut and ends in ``~`` and a
    digest of the whole (``~`` never appears in an escaped id)."""
    escaped = "".join(
        c if (c.isascii() and (c.isalnum() or c in "-_")) else _escape(c) for c in value
    )
    if len(escaped) <= SEGMENT_MAX:
        return escaped
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{escaped[: SEGMENT_MAX - 33]}~{digest}"


def _escape(char: str) -> str:
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
