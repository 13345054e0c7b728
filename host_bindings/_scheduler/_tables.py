"""The schedule tables, their migrations, and rows to values and back (both backends').

Instants are stored as integer microseconds since the epoch (``*_us`` columns): exact, and
ordered by the ``schedules_due`` index, which holds only the rows a due-scan can return.
A schedule's principal is its :meth:`~toolcage.policies.Principal.to_record` as JSON text
(``principal``); a record that does not read back as a principal of the row's own user
reads as ``None``, which fails that schedule's runs and nothing else.
Migrations are versioned under their own key in the state store's ``store_meta``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from toolcage.host_bindings._backends._errors import StoreError
from toolcage.host_bindings._backends._migrations import Migrations
from toolcage.policies import Principal

from ._model import (
    CadenceType,
    Notification,
    RunRecord,
    RunStatus,
    Schedule,
    ScheduleStatus,
)
from ._store import Fault, Unreadable

VERSION_KEY = "scheduler_schema_version"
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # 1: schedules and their runs.
    (
        """CREATE TABLE schedules (
            schedule_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            name TEXT NOT NULL,
            goal TEXT NOT NULL,
            cadence_type TEXT NOT NULL,
            cadence_value TEXT NOT NULL,
            timezone TEXT NOT NULL,
            notification TEXT NOT NULL,
            status TEXT NOT NULL,
            channel_id TEXT,
            next_run_us INTEGER,
            created_us INTEGER NOT NULL,
            updated_us INTEGER NOT NULL,
            last_run_us INTEGER,
            running_run_id TEXT
        )""",
        """CREATE INDEX schedules_due ON schedules (next_run_us)
            WHERE status = 'active' AND running_run_id IS NULL""",
        "CREATE INDEX schedules_by_user ON schedules (user_id, created_us)",
        """CREATE TABLE schedule_runs (
            run_id TEXT PRIMARY KEY,
            schedule_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            occurrence_us INTEGER NOT NULL,
            status TEXT NOT NULL,
            owner TEXT NOT NULL,
            started_us INTEGER NOT NULL,
            ended_us INTEGER,
            lease_us INTEGER,
            summary TEXT NOT NULL DEFAULT '',
            cost REAL NOT NULL DEFAULT 0,
            output TEXT NOT NULL DEFAULT '',
            skipped INTEGER NOT NULL DEFAULT 0,
            skipped_first_us INTEGER,
            skipped_last_us INTEGER,
            UNIQUE (schedule_id, occurrence_us)
        )""",
        "CREATE INDEX schedule_runs_by_schedule ON schedule_runs (schedule_id, started_us)",
        "CREATE INDEX schedule_runs_leases ON schedule_runs (lease_us) WHERE status = 'running'",
    ),
    # 2: the principal a schedule runs as, and whether its agent was an [agents.*] profile.
    # Schedules made before ran as agent "default" in a main session "schedule:ID" at
    # depth 0, whichever agent created them: exactly that is recorded, so none runs wider.
    (
        "ALTER TABLE schedules ADD COLUMN principal TEXT",
        "ALTER TABLE schedules ADD COLUMN agent_profile INTEGER NOT NULL DEFAULT 0",
        """UPDATE schedules SET principal = json_object(
            'user_id', user_id, 'agent_id', 'default', 'session_id', 'schedule:' || schedule_id,
            'session_kind', 'main', 'channel_id', channel_id, 'parents', json_array(),
            'delegation_depth', 0
        ) WHERE principal IS NULL""",
    ),
)

SCHEDULES = Migrations(VERSION_KEY, MIGRATIONS, "schedule store")
"""The schedule tables' migrations, versioned as ``scheduler_schema_version``."""

SCHEDULE_COLUMNS = (
    "schedule_id, user_id, name, goal, cadence_type, cadence_value, timezone, notification,"
    " status, channel_id, next_run_us, created_us, updated_us, last_run_us, principal,"
    " agent_profile"
)
INSERT_SCHEDULE = (
    f"INSERT INTO schedules ({SCHEDULE_COLUMNS})"
    f" VALUES ({', '.join('?' for _ in SCHEDULE_COLUMNS.split(','))})"
)
RUN_COLUMNS = (
    "run_id, schedule_id, occurrence_us, status, started_us, ended_us, summary, cost,"
    " length(output), skipped, skipped_first_us, skipped_last_us"
)
EDITABLE_COLUMNS = {
    "name": "name",
    "goal": "goal",
    "cadence_type": "cadence_type",
    "cadence_value": "cadence_value",
    "timezone": "timezone",
    "notification": "notification",
    "status": "status",
    "next_run_at": "next_run_us",
    "updated_at": "updated_us",
}
SCHEDULE_OF_RUN = (
    f"SELECT {', '.join('s.' + c.strip() for c in SCHEDULE_COLUMNS.split(','))}"
    " FROM schedules AS s JOIN schedule_runs AS r ON r.schedule_id = s.schedule_id"
    " WHERE r.run_id = ?"
)
# A fault, in three statements of one transaction (a libSQL batch has no branches): pause
# the schedule if it is still as seen, marking it with the run id; insert the failed run
# only where the mark is; clear the mark.
FAULT_PAUSE = (
    "UPDATE schedules SET status = 'paused', running_run_id = ? WHERE schedule_id = ?"
    " AND next_run_us = ? AND status = 'active' AND running_run_id IS NULL"
)
FAULT_RUN = (
    "INSERT OR IGNORE INTO schedule_runs (run_id, schedule_id, user_id, occurrence_us,"
    " status, owner, started_us, ended_us, summary, output) SELECT ?, schedule_id, user_id,"
    " ?, 'failed', ?, ?, ?, ?, ? FROM schedules WHERE schedule_id = ? AND running_run_id = ?"
)
FAULT_CLEAR = "UPDATE schedules SET running_run_id = NULL WHERE running_run_id = ?"
LEASE_EXPIRED = "the scheduler running it stopped before it ended (its lease expired)"


def fault_statements(fault: Fault) -> list[tuple[str, tuple[object, ...]]]:
    """The statements that record ``fault`` (see :data:`FAULT_PAUSE`), with their values."""
    at = to_us(fault.at)
    return [
        (FAULT_PAUSE, (fault.run_id, fault.schedule_id, to_us(fault.seen_next_run_at))),
        (
            FAULT_RUN,
            (
                fault.run_id,
                to_us(fault.seen_next_run_at),
                fault.owner,
                at,
                at,
                fault.reason,
                fault.reason,
                fault.schedule_id,
                fault.run_id,
            ),
        ),
        (FAULT_CLEAR, (fault.run_id,)),
    ]


def to_us(moment: datetime | None) -> int | None:
    if moment is None:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_us(value: Any) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(int(value) // 1_000_000, UTC).replace(
        microsecond=int(value) % 1_000_000
    )


def from_us_required(value: Any) -> datetime:
    moment = from_us(value)
    if moment is None:
        raise StoreError("a required instant is missing")
    return moment


def schedule_values(schedule: Schedule) -> tuple[object, ...]:
    """The row of ``schedule``, in the order of the schedule columns."""
    return (
        schedule.schedule_id,
        schedule.user_id,
        schedule.name,
        schedule.goal,
        schedule.cadence_type.value,
        schedule.cadence_value,
        schedule.timezone,
        schedule.notification.value,
        schedule.status.value,
        schedule.channel_id,
        to_us(schedule.next_run_at),
        to_us(schedule.created_at),
        to_us(schedule.updated_at),
        to_us(schedule.last_run_at),
        None if schedule.principal is None else principal_text(schedule.principal),
        int(schedule.agent_profile),
    )


def principal_text(principal: Principal) -> str:
    """The stored form of a principal: its record as compact JSON."""
    return json.dumps(principal.to_record(), ensure_ascii=False, separators=(",", ":"))


def principal_of(text: Any, user_id: str) -> Principal | None:
    """The principal stored as ``text`` for a row of ``user_id``; ``None`` when it is not
    one, or is another user's (see the module docstring)."""
    try:
        principal = Principal.from_record(json.loads(text))
    except (TypeError, ValueError, AttributeError):  # not JSON, not a record, bad ids
        return None
    return principal if principal.user_id == user_id else None


def column_value(value: object) -> object:
    if isinstance(value, datetime):
        return to_us(value)
    if isinstance(value, (CadenceType, Notification, ScheduleStatus)):
        return value.value
    return value


def schedule_row(row: Sequence[Any]) -> Schedule:
    user_id = str(row[1])
    return Schedule(
        schedule_id=str(row[0]),
        user_id=user_id,
        name=str(row[2]),
        goal=str(row[3]),
        cadence_type=CadenceType(row[4]),
        cadence_value=str(row[5]),
        timezone=str(row[6]),
        notification=Notification(row[7]),
        status=ScheduleStatus(row[8]),
        channel_id=None if row[9] is None else str(row[9]),
        next_run_at=from_us(row[10]),
        created_at=from_us_required(row[11]),
        updated_at=from_us_required(row[12]),
        last_run_at=from_us(row[13]),
        principal=principal_of(row[14], user_id),
        agent_profile=bool(row[15]),
    )


def due_row(row: Sequence[Any]) -> Schedule | Unreadable:
    """A row of the due-scan: its schedule, or :class:`Unreadable` saying why it is not one
    (the scan selected it by its ``next_run_us``, so that much is readable)."""
    try:
        return schedule_row(row)
    except Exception as exc:  # any value of one row: that row's fault, not the scan's
        return Unreadable(
            schedule_id=str(row[0]),
            user_id=str(row[1]),
            next_run_at=from_us_required(row[10]),
            reason=f"its stored row cannot be read ({type(exc).__name__}: {exc})",
        )


def run_row(row: Sequence[Any]) -> RunRecord:
    return RunRecord(
        run_id=str(row[0]),
        schedule_id=str(row[1]),
        occurrence_at=from_us_required(row[2]),
        status=RunStatus(row[3]),
        started_at=from_us_required(row[4]),
        ended_at=from_us(row[5]),
        summary=str(row[6]),
        cost=float(row[7]),
        output_chars=int(row[8]),
        skipped=int(row[9]),
        skipped_first=from_us(row[10]),
        skipped_last=from_us(row[11]),
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
