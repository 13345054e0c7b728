"""The schedule store's seam: a sibling of :class:`~toolcage.host_bindings._store.StateStore`.

Schedules and runs live in the same database as notes (the same ``sqlite:`` file), in
tables of their own, migrated under their own version key (``scheduler_schema_version``
in ``store_meta``). A sibling Protocol rather than more methods on ``StateStore``: the
scheduler service needs only these, the memory tools none of them, and neither side's
migrations can collide with the other's.

Every owner-facing method takes ``user_id`` and scopes its SQL by it, so another user's
schedule or run is exactly like a missing one. The service-facing methods
(:meth:`due_schedules`, :meth:`claim`, :meth:`record_fault`, :meth:`renew`, :meth:`finish_run`,
:meth:`expire_leases`, :meth:`get_run`, :meth:`schedule_of_run`) work across users.

Never twice: :meth:`claim` moves a schedule's ``next_run_at`` forward and inserts the run
in one write transaction, on condition that ``next_run_at`` is still the value the caller
saw, the schedule is active and no run of it is in flight; ``runs`` is also unique on
``(schedule_id, occurrence_at)`` (a claim of an occurrence that already ran moves
``next_run_at`` on and runs nothing). Of several processes racing for one occurrence,
exactly one gets ``True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from ._model import OutputChunk, RunRecord, RunStatus, Schedule, ScheduleStatus


@dataclass(frozen=True, slots=True)
class ScheduleFilter:
    """Search filters; ``None`` matches anything. ``name`` is a case-insensitive substring."""

    name: str | None = None
    status: str | None = None
    cadence_type: str | None = None
    notification: str | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """What a scheduler asks to take: one occurrence of one schedule, under a lease."""

    schedule_id: str
    seen_next_run_at: datetime
    """The ``next_run_at`` the scheduler read; the claim fails if it has moved."""
    occurrence_at: datetime
    """The occurrence to run (the latest due one)."""
    next_run_at: datetime | None
    """The schedule's next occurrence after this run (``None``: it is done)."""
    next_status: ScheduleStatus
    """The schedule's status after the claim (``completed`` for a ``once``)."""
    run_id: str
    owner: str
    """The claiming scheduler's id."""
    started_at: datetime
    lease_until: datetime
    """Past this instant without :meth:`ScheduleStore.renew`, the run is failed."""
    skipped: int = 0
    skipped_first: datetime | None = None
    skipped_last: datetime | None = None


@dataclass(frozen=True, slots=True)
class Fault:
    """A schedule the scheduler cannot run (its time zone is unknown to this host, its
    cadence cannot be computed, ...): it is paused and the occurrence recorded failed."""

    schedule_id: str
    seen_next_run_at: datetime
    """The ``next_run_at`` the scheduler read; nothing is recorded if it has moved."""
    run_id: str
    """The failed run recorded for the occurrence ``seen_next_run_at``."""
    owner: str
    at: datetime
    reason: str
    """What went wrong and what would fix it: the run's summary and output."""


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A due schedule whose stored row cannot be read (a value this toolcage does not know,
    an edit by hand): the scheduler pauses it with the reason, and the others go on."""

    schedule_id: str
    user_id: str
    next_run_at: datetime
    reason: str


@runtime_checkable
class ScheduleStore(Protocol):
    """Schedules and their runs, of many users. Thread-safe; close when done."""

    def insert_schedule(self, schedule: Schedule) -> None:
        """Store a new schedule."""
        ...

    def get_schedule(self, user_id: str, schedule_id: str) -> Schedule | None:
        """The user's schedule, or ``None``."""
        ...

    def search_schedules(
        self, user_id: str, filters: ScheduleFilter, *, limit: int, offset: int
    ) -> tuple[list[Schedule], int]:
        """A page of the user's matching schedules (newest first) and how many match."""
        ...

    def update_schedule(
        self, user_id: str, schedule_id: str, changes: Mapping[str, object]
    ) -> Schedule | None:
        """Set the given columns of the user's schedule; ``None`` when it has none such."""
        ...

    def delete_schedule(self, user_id: str, schedule_id: str) -> bool:
        """Remove the user's schedule and its runs; ``False`` when it had none such."""
        ...

    def due_schedules(self, now: datetime, limit: int) -> list[Schedule | Unreadable]:
        """Active schedules with ``next_run_at <= now`` and no run in flight, earliest first
        (a row that cannot be read as an :class:`Unreadable`)."""
        ...

    def claim(self, claim: Claim) -> bool:
        """Take the occurrence atomically (see the module docstring)."""
        ...

    def record_fault(self, fault: Fault) -> bool:
        """Pause the schedule and record its occurrence ``failed`` with the reason, in one
        transaction, if it is still active, idle and at ``seen_next_run_at``; ``False``
        when it is not (another scheduler or its owner changed it)."""
        ...

    def renew(self, run_id: str, owner: str, lease_until: datetime) -> bool:
        """Extend a running run's lease; ``False`` if it is no longer this owner's."""
        ...

    def finish_run(
        self,
        run_id: str,
        owner: str,
        *,
        status: RunStatus,
        ended_at: datetime,
        summary: str,
        cost: float,
        output: str,
    ) -> bool:
        """Record the end of a run this owner holds; ``False`` when its lease was lost."""
        ...

    def expire_leases(self, now: datetime) -> list[str]:
        """Mark running runs whose lease ended before ``now`` failed; their ids."""
        ...

    def schedule_of_run(self, run_id: str) -> Schedule | None:
        """The schedule a run belongs to, of any user (for the service)."""
        ...

    def get_run(self, run_id: str) -> RunRecord | None:
        """A run by id, of any user (for the service)."""
        ...

    def list_runs(self, user_id: str, schedule_id: str, limit: int) -> list[RunRecord] | None:
        """The schedule's latest runs, newest first; ``None`` when the user has no such
        schedule."""
        ...

    def run_output(
        self, user_id: str, run_id: str, offset: int, max_chars: int
    ) -> OutputChunk | None:
        """A slice of the user's run's output; ``None`` when the user has no such run."""
        ...

    def close(self) -> None:
        """Release connections (idempotent)."""
        ...
