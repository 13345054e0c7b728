"""The embedded schedule store: schedules and runs in the state store's SQLite file.

Opened, migrated and closed by the embedded backend
(:mod:`toolcage.host_bindings._backends._embedded`), on the state store's connection pool
(WAL, one ``BEGIN IMMEDIATE`` per write, busy timeout), so several scheduler processes on
one file serialise their claims. Instants are stored as integer microseconds since the
epoch (``*_us`` columns): exact, and ordered by the ``schedules_due`` index, which holds
only the rows a due-scan can return.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

import apsw
from toolcage.host_bindings._backends._embedded import EmbeddedBackend
from toolcage.host_bindings._backends._sqlite_pool import BUSY_TIMEOUT_MS

from ._model import (
    OutputChunk,
    RunRecord,
    RunStatus,
    Schedule,
)
from ._store import Claim, Fault, ScheduleFilter, Unreadable
from ._tables import (
    EDITABLE_COLUMNS,
    INSERT_SCHEDULE,
    LEASE_EXPIRED,
    RUN_COLUMNS,
    SCHEDULE_COLUMNS,
    SCHEDULE_OF_RUN,
    SCHEDULES,
    column_value,
    due_row,
    fault_statements,
    run_row,
    schedule_row,
    schedule_values,
    to_us,
)


class _Lost(Exception):
    """Rolls back a claim that lost its race."""


class EmbeddedScheduleStore(EmbeddedBackend):
    """A :class:`~._store.ScheduleStore` in the SQLite file at ``path``::

    with EmbeddedScheduleStore(Path("state.db"), url="sqlite:state.db") as store:
        store.get_schedule("alice", "sched-…")
    """

    def __init__(self, path: Path, *, url: str, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
        super().__init__(path, url=url, migrations=SCHEDULES, busy_timeout_ms=busy_timeout_ms)

    # -- owners ------------------------------------------------------------------------

    def insert_schedule(self, schedule: Schedule) -> None:
        with self._writing() as conn:
            conn.execute(
                INSERT_SCHEDULE,
                schedule_values(schedule),
            )

    def get_schedule(self, user_id: str, schedule_id: str) -> Schedule | None:
        with self._reading() as conn:
            return _fetch_schedule(conn, user_id, schedule_id)

    def search_schedules(
        self, user_id: str, filters: ScheduleFilter, *, limit: int, offset: int
    ) -> tuple[list[Schedule], int]:
        where, params = ["user_id = ?"], [user_id]
        if filters.name is not None:
            where.append("instr(lower(name), lower(?)) > 0")
            params.append(filters.name)
        for column in ("status", "cadence_type", "notification"):
            value = getattr(filters, column)
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        clause = " AND ".join(where)
        with self._reading() as conn:
            total = conn.execute(
                f"SELECT count(*) FROM schedules WHERE {clause}", params
            ).fetchone()
            rows = conn.execute(
                f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE {clause}"
                " ORDER BY created_us DESC, schedule_id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            ).fetchall()
        return [schedule_row(row) for row in rows], int(total[0]) if total else 0

    def update_schedule(
        self, user_id: str, schedule_id: str, changes: Mapping[str, object]
    ) -> Schedule | None:
        columns = [f"{EDITABLE_COLUMNS[key]} = ?" for key in changes]
        values = [column_value(value) for value in changes.values()]
        with self._writing() as conn:
            if columns:
                conn.execute(
                    f"UPDATE schedules SET {', '.join(columns)}"
                    " WHERE user_id = ? AND schedule_id = ?",
                    [*values, user_id, schedule_id],
                )
            return _fetch_schedule(conn, user_id, schedule_id)

    def delete_schedule(self, user_id: str, schedule_id: str) -> bool:
        with self._writing() as conn:
            conn.execute(
                "DELETE FROM schedules WHERE user_id = ? AND schedule_id = ?",
                (user_id, schedule_id),
            )
            if conn.changes() == 0:
                return False
            conn.execute(
                "DELETE FROM schedule_runs WHERE user_id = ? AND schedule_id = ?",
                (user_id, schedule_id),
            )
            return True

    def list_runs(self, user_id: str, schedule_id: str, limit: int) -> list[RunRecord] | None:
        with self._reading() as conn:
            if _fetch_schedule(conn, user_id, schedule_id) is None:
                return None
            rows = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM schedule_runs WHERE user_id = ? AND schedule_id = ?"
                " ORDER BY started_us DESC, run_id LIMIT ?",
                (user_id, schedule_id, limit),
            ).fetchall()
        return [run_row(row) for row in rows]

    def run_output(
        self, user_id: str, run_id: str, offset: int, max_chars: int
    ) -> OutputChunk | None:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT substr(output, ?, ?), length(output) FROM schedule_runs"
                " WHERE user_id = ? AND run_id = ?",
                (offset + 1, max_chars, user_id, run_id),
            ).fetchone()
        if row is None:
            return None
        text, total = str(row[0]), int(row[1])
        return OutputChunk(run_id, text, offset, max(0, total - offset - len(text)), total)

    # -- the service -------------------------------------------------------------------

    def due_schedules(self, now: datetime, limit: int) -> list[Schedule | Unreadable]:
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {SCHEDULE_COLUMNS} FROM schedules"
                " WHERE status = 'active' AND running_run_id IS NULL AND next_run_us <= ?"
                " ORDER BY next_run_us LIMIT ?",
                (to_us(now), limit),
            ).fetchall()
        return [due_row(row) for row in rows]

    def claim(self, claim: Claim) -> bool:
        try:
            with self._writing() as conn:
                conn.execute(
                    "UPDATE schedules SET next_run_us = ?, status = ?, last_run_us = ?,"
                    " running_run_id = ? WHERE schedule_id = ? AND next_run_us = ?"
                    " AND status = 'active' AND running_run_id IS NULL",
                    (
                        to_us(claim.next_run_at),
                        claim.next_status.value,
                        to_us(claim.started_at),
                        claim.run_id,
                        claim.schedule_id,
                        to_us(claim.seen_next_run_at),
                    ),
                )
                if conn.changes() != 1:
                    raise _Lost
                conn.execute(
                    "INSERT OR IGNORE INTO schedule_runs (run_id, schedule_id, user_id,"
                    " occurrence_us, status, owner, started_us, lease_us, skipped,"
                    " skipped_first_us, skipped_last_us) SELECT ?, schedule_id, user_id, ?,"
                    " 'running', ?, ?, ?, ?, ?, ? FROM schedules WHERE schedule_id = ?",
                    (
                        claim.run_id,
                        to_us(claim.occurrence_at),
                        claim.owner,
                        to_us(claim.started_at),
                        to_us(claim.lease_until),
                        claim.skipped,
                        to_us(claim.skipped_first),
                        to_us(claim.skipped_last),
                        claim.schedule_id,
                    ),
                )
                if conn.changes() != 1:  # the occurrence ran already: move on, run nothing
                    conn.execute(
                        "UPDATE schedules SET running_run_id = NULL WHERE schedule_id = ?",
                        (claim.schedule_id,),
                    )
                    return False
        except _Lost:
            return False
        return True

    def record_fault(self, fault: Fault) -> bool:
        with self._writing() as conn:
            paused = False
            for number, (sql, values) in enumerate(fault_statements(fault)):
                conn.execute(sql, values)
                if number == 0:
                    paused = conn.changes() == 1
            return paused

    def renew(self, run_id: str, owner: str, lease_until: datetime) -> bool:
        with self._writing() as conn:
            conn.execute(
                "UPDATE schedule_runs SET lease_us = ?"
                " WHERE run_id = ? AND owner = ? AND status = 'running'",
                (to_us(lease_until), run_id, owner),
            )
            return bool(conn.changes() == 1)

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
        with self._writing() as conn:
            conn.execute(
                "UPDATE schedule_runs SET status = ?, ended_us = ?, lease_us = NULL,"
                " summary = ?, cost = ?, output = ?"
                " WHERE run_id = ? AND owner = ? AND status = 'running'",
                (status.value, to_us(ended_at), summary, cost, output, run_id, owner),
            )
            if conn.changes() != 1:
                return False
            conn.execute(
                "UPDATE schedules SET running_run_id = NULL WHERE running_run_id = ?", (run_id,)
            )
            return True

    def expire_leases(self, now: datetime) -> list[str]:
        with self._writing() as conn:
            expired = [
                str(row[0])
                for row in conn.execute(
                    "SELECT run_id FROM schedule_runs WHERE status = 'running' AND lease_us < ?",
                    (to_us(now),),
                )
            ]
            for run_id in expired:
                conn.execute(
                    "UPDATE schedule_runs SET status = 'failed', ended_us = ?, lease_us = NULL,"
                    " summary = ? WHERE run_id = ?",
                    (to_us(now), LEASE_EXPIRED, run_id),
                )
                conn.execute(
                    "UPDATE schedules SET running_run_id = NULL WHERE running_run_id = ?",
                    (run_id,),
                )
            return expired

    def schedule_of_run(self, run_id: str) -> Schedule | None:
        with self._reading() as conn:
            row = conn.execute(SCHEDULE_OF_RUN, (run_id,)).fetchone()
        return None if row is None else schedule_row(row)

    def get_run(self, run_id: str) -> RunRecord | None:
        with self._reading() as conn:
            row = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM schedule_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        return None if row is None else run_row(row)


def _fetch_schedule(conn: apsw.Connection, user_id: str, schedule_id: str) -> Schedule | None:
    row = conn.execute(
        f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE user_id = ? AND schedule_id = ?",
        (user_id, schedule_id),
    ).fetchone()
    return None if row is None else schedule_row(row)
