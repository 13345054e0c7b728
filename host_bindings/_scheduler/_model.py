"""The scheduler's values and errors: schedules, runs, pages of them.

Errors carry the envelope's ``error_type``: :class:`ScheduleValidationError` is
``validation_error`` (with the offending ``field``), :class:`ScheduleNotFound` is
``not_found`` -- also for another user's schedule or run, which is never told apart from
a missing one.

Instants are timezone-aware :class:`~datetime.datetime` in UTC; :func:`iso` renders them
as RFC 3339 (``2026-03-29T01:00:00Z``).

A schedule keeps the whole :class:`~toolcage.policies.Principal` of the call that created
it -- user, agent, session kind, channel, delegation chain and depth -- and its turns run
as that principal again (in a session of their own); no argument sets or edits it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from toolcage.policies import Principal


class ScheduleError(Exception):
    """A scheduler operation was refused; ``error_type`` names the envelope's kind."""

    error_type = "execution_error"


class ScheduleValidationError(ScheduleError, ValueError):
    """An argument is invalid; ``field`` names it (the envelope's ``field``) and the
    message says what would do: the limit and the value given, a short excerpt of it."""

    error_type = "validation_error"

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class ScheduleForbidden(ScheduleError, PermissionError):
    """The user's schedule belongs to another of the user's agents, which alone may change
    it (its goal runs with that agent's tools)."""

    error_type = "permission_denied"


class ScheduleNotFound(ScheduleError, LookupError):
    """No such schedule or run for this user."""

    error_type = "not_found"


class CadenceType(enum.StrEnum):
    """How a schedule repeats."""

    CRON = "cron"
    """A standard 5-field cron expression or macro, read in the schedule's time zone
    (see :mod:`._cron` and, for DST, :mod:`._cadence`)."""
    ONCE = "once"
    """One RFC 3339 instant in the future (see :mod:`._forms`)."""
    INTERVAL = "interval"
    """Every N seconds of elapsed time (``"90"``, ``"15m"``, ``"2h"``, ``"1d"``,
    ``"PT1H30M"``)."""


class Notification(enum.StrEnum):
    """When a finished run is sent to the schedule's channel."""

    ALWAYS = "always"
    CONDITIONAL = "conditional"
    """Only when the run reports something (see :class:`~._service.TurnOutcome.report`)."""
    NEVER = "never"


class ScheduleStatus(enum.StrEnum):
    """A schedule's state."""

    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETED = "completed"
    """A ``once`` schedule that has fired."""


class RunStatus(enum.StrEnum):
    """A run's state."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    """The turn raised, or its scheduler's lease expired (the process died mid-run)."""


def iso(moment: datetime | None) -> str | None:
    """RFC 3339 in UTC with a ``Z``, whole seconds unless the instant has a fraction."""
    if moment is None:
        return None
    text = moment.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Schedule:
    """One user's schedule, as stored."""

    schedule_id: str
    """``sched-{uuid4}``."""
    user_id: str
    """Its owner: the only user who sees, edits or deletes it (its principal's user)."""
    name: str
    """A label for searching (defaults to the start of the goal)."""
    goal: str
    """The self-contained instruction each run is given as its prompt."""
    cadence_type: CadenceType
    """How it repeats."""
    cadence_value: str
    """The cron expression, instant or interval, as validated (normalised)."""
    timezone: str
    """The canonical IANA zone name the cadence is read in (see :mod:`._zones`)."""
    notification: Notification
    """When runs are sent to ``channel_id``."""
    status: ScheduleStatus
    """Active, paused or completed."""
    channel_id: str | None
    """Where notifications go: the channel of the call that created it."""
    next_run_at: datetime | None
    """The next occurrence (UTC); ``None`` once a ``once`` schedule has fired."""
    created_at: datetime
    """When it was created."""
    updated_at: datetime
    """When it was last changed by its owner."""
    last_run_at: datetime | None
    """When its latest run started."""
    principal: Principal | None
    """Who it runs as: the principal of the call that created it (its turns run in a
    session ``schedule:ID`` of their own). ``None`` when the stored record cannot be read
    back (or names another user than the owner): such a schedule's runs fail, it never
    runs as anyone."""
    agent_profile: bool
    """Whether its agent was an ``[agents.*]`` profile when it was created: if that
    profile is gone, its runs fail rather than run as an unrestricted agent of that id."""

    def to_json(self) -> dict[str, Any]:
        """The schedule as a tool result shows it (no ``user_id``)."""
        return {
            "schedule_id": self.schedule_id,
            "name": self.name,
            "goal": self.goal,
            "cadence_type": self.cadence_type.value,
            "cadence_value": self.cadence_value,
            "timezone": self.timezone,
            "notification": self.notification.value,
            "status": self.status.value,
            "channel_id": self.channel_id,
            "agent_id": None if self.principal is None else self.principal.agent_id,
            "next_run_at": iso(self.next_run_at),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "last_run_at": iso(self.last_run_at),
        }


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One firing of a schedule: metadata only (the output is paged separately)."""

    run_id: str
    """``run-{uuid4}``."""
    schedule_id: str
    """The schedule it ran."""
    occurrence_at: datetime
    """The occurrence it fired for (the latest one that was due)."""
    status: RunStatus
    """Running, succeeded or failed."""
    started_at: datetime
    """When it was claimed and started."""
    ended_at: datetime | None
    """When it ended; ``None`` while running."""
    summary: str
    """A short summary (the start of the output, or the failure)."""
    cost: float
    """What the turn cost."""
    output_chars: int
    """Length of the full output."""
    skipped: int
    """Earlier occurrences missed while no scheduler ran, skipped in favour of this run."""
    skipped_first: datetime | None
    """The earliest skipped occurrence."""
    skipped_last: datetime | None
    """The latest skipped occurrence."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "schedule_id": self.schedule_id,
            "occurrence_at": iso(self.occurrence_at),
            "status": self.status.value,
            "started_at": iso(self.started_at),
            "ended_at": iso(self.ended_at),
            "summary": self.summary,
            "cost": self.cost,
            "output_chars": self.output_chars,
            "skipped": self.skipped,
            "skipped_first": iso(self.skipped_first),
            "skipped_last": iso(self.skipped_last),
        }


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of a user's schedules."""

    schedules: tuple[Schedule, ...]
    total: int
    """How many schedules match the filters."""
    remaining: int
    """How many come after this page."""
    hint: str
    """What to call next (the next ``offset``, or that this is the last page)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "schedules": [s.to_json() for s in self.schedules],
            "total": self.total,
            "remaining": self.remaining,
            "hint": self.hint,
        }


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """A slice of a run's full output."""

    run_id: str
    text: str
    offset: int
    """Where ``text`` starts, in characters."""
    remaining: int
    """Characters after this chunk."""
    total_chars: int

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "text": self.text,
            "offset": self.offset,
            "remaining": self.remaining,
            "total_chars": self.total_chars,
        }
