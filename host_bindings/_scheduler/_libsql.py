"""The remote schedule store: schedules and runs on a libSQL server (libsql-client, HTTP).

The server's HTTP API has no interactive transactions; a ``batch`` is one. So each
change is one batch whose statements carry their own conditions: a claim updates the
schedule only if ``next_run_at`` is still the one the scheduler saw (and nothing runs),
inserts the run only if that update set the schedule's ``running_run_id`` to this run,
and clears it again if the insert found the occurrence already ran; the last statement
reports whether the run exists. The tables and their migrations are the embedded
store's (:mod:`._tables`), under the same version key; the client, its lifecycle and
error translation are the remote backend's
(:mod:`toolcage.host_bindings._backends._remote`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from toolcage.host_bindings._backends._migrations import Statement
from toolcage.host_bindings._backends._remote import REQUEST_TIMEOUT, RemoteBackend

from ._model import OutputChunk, RunRecord, RunStatus, Schedule
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


class RemoteScheduleStore(RemoteBackend):
    """A :class:`~._store.ScheduleStore` on the libSQL server at ``endpoint``."""

    def __init__(
        self,
        endpoint: str,
        *,
        url: str,
        auth_token: str | None = None,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        super().__init__(
            endpoint, url=url, migrations=SCHEDULES, auth_token=auth_token, timeout=timeout
        )

    # -- owners ------------------------------------------------------------------------

    def insert_schedule(self, schedule: Schedule) -> None:
        self._execute(
            INSERT_SCHEDULE,
            schedule_values(schedule),
        )

    def get_schedule(self, user_id: str, schedule_id: str) -> Schedule | None:
        rows = self._execute(_SELECT_ONE, (user_id, schedule_id))
        return schedule_row(rows[0]) if rows else None

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
        total, page = self._batch(
            [
                (f"SELECT count(*) FROM schedules WHERE {clause}", params),
                (
                    f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE {clause}"
                    " ORDER BY created_us DESC, schedule_id LIMIT ? OFFSET ?",
                    [*params, limit, offset],
                ),
            ]
        )
        return [schedule_row(row) for row in page], int(total[0][0])

    def update_schedule(
        self, user_id: str, schedule_id: str, changes: Mapping[str, object]
    ) -> Schedule | None:
        statements: list[Statement] = []
        if changes:
            columns = ", ".join(f"{EDITABLE_COLUMNS[key]} = ?" for key in changes)
            values = [column_value(value) for value in changes.values()]
            statements.append(
                (
                    f"UPDATE schedules SET {columns} WHERE user_id = ? AND schedule_id = ?",
                    [*values, user_id, schedule_id],
                )
            )
        statements.append((_SELECT_ONE, (user_id, schedule_id)))
        rows = self._batch(statements)[-1]
        return schedule_row(rows[0]) if rows else None

    def delete_schedule(self, user_id: str, schedule_id: str) -> bool:
        changed = self._changed(
            [
                (
                    "DELETE FROM schedule_runs WHERE user_id = ? AND schedule_id = ?",
                    (user_id, schedule_id),
                ),
                (
                    "DELETE FROM schedules WHERE user_id = ? AND schedule_id = ?",
                    (user_id, schedule_id),
                ),
            ]
        )
        return bool(changed[1])

    def list_runs(self, user_id: str, schedule_id: str, limit: int) -> list[RunRecord] | None:
        found, rows = self._batch(
            [
                (_SELECT_ONE, (user_id, schedule_id)),
                (
                    f"SELECT {RUN_COLUMNS} FROM schedule_runs"
                    " WHERE user_id = ? AND schedule_id = ?"
                    " ORDER BY started_us DESC, run_id LIMIT ?",
                    (user_id, schedule_id, limit),
                ),
            ]
        )
        if not found:
            return None
        return [run_row(row) for row in rows]

    def run_output(
        self, user_id: str, run_id: str, offset: int, max_chars: int
    ) -> OutputChunk | None:
        rows = self._execute(
            "SELECT substr(output, ?, ?), length(output) FROM schedule_runs"
            " WHERE user_id = ? AND run_id = ?",
            (offset + 1, max_chars, user_id, run_id),
        )
        if not rows:
            return None
        text, total = str(rows[0][0]), int(rows[0][1])
        return OutputChunk(run_id, text, offset, max(0, total - offset - len(text)), total)

    # -- the service -------------------------------------------------------------------

    def due_schedules(self, now: datetime, limit: int) -> list[Schedule | Unreadable]:
        rows = self._execute(
            f"SELECT {SCHEDULE_COLUMNS} FROM schedules"
            " WHERE status = 'active' AND running_run_id IS NULL AND next_run_us <= ?"
            " ORDER BY next_run_us LIMIT ?",
            (to_us(now), limit),
        )
        return [due_row(row) for row in rows]

    def claim(self, claim: Claim) -> bool:
        results = self._batch(
            [
                (
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
                ),
                (
                    "INSERT OR IGNORE INTO schedule_runs (run_id, schedule_id, user_id,"
                    " occurrence_us, status, owner, started_us, lease_us, skipped,"
                    " skipped_first_us, skipped_last_us) SELECT ?, schedule_id, user_id, ?,"
                    " 'running', ?, ?, ?, ?, ?, ? FROM schedules"
                    " WHERE schedule_id = ? AND running_run_id = ?",
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
                        claim.run_id,
                    ),
                ),
                (  # the occurrence ran already: move on, run nothing
                    "UPDATE schedules SET running_run_id = NULL WHERE running_run_id = ?"
                    " AND NOT EXISTS (SELECT 1 FROM schedule_runs WHERE run_id = ?)",
                    (claim.run_id, claim.run_id),
                ),
                ("SELECT count(*) FROM schedule_runs WHERE run_id = ?", (claim.run_id,)),
            ]
        )
        return int(results[-1][0][0]) == 1

    def record_fault(self, fault: Fault) -> bool:
        return self._changed(fault_statements(fault))[0] == 1

    def renew(self, run_id: str, owner: str, lease_until: datetime) -> bool:
        renewed = (
            "UPDATE schedule_runs SET lease_us = ?"
            " WHERE run_id = ? AND owner = ? AND status = 'running'",
            (to_us(lease_until), run_id, owner),
        )
        return self._changed([renewed])[0] == 1

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
        changed = self._changed(
            [
                (
                    "UPDATE schedule_runs SET status = ?, ended_us = ?, lease_us = NULL,"
                    " summary = ?, cost = ?, output = ?"
                    " WHERE run_id = ? AND owner = ? AND status = 'running'",
                    (status.value, to_us(ended_at), summary, cost, output, run_id, owner),
                ),
                (
                    "UPDATE schedules SET running_run_id = NULL WHERE running_run_id = ?",
                    (run_id,),
                ),
            ]
        )
        return changed[0] == 1

    def expire_leases(self, now: datetime) -> list[str]:
        at = to_us(now)
        expired = "SELECT run_id FROM schedule_runs WHERE status = 'running' AND lease_us < ?"
        results = self._batch(
            [
                (expired, (at,)),
                (
                    "UPDATE schedules SET running_run_id = NULL"
                    f" WHERE running_run_id IN ({expired})",
                    (at,),
                ),
                (
                    "UPDATE schedule_runs SET status = 'failed', ended_us = ?, lease_us = NULL,"
                    " summary = ? WHERE status = 'running' AND lease_us < ?",
                    (at, LEASE_EXPIRED, at),
                ),
            ]
        )
        return [str(row[0]) for row in results[0]]

    def schedule_of_run(self, run_id: str) -> Schedule | None:
        rows = self._execute(SCHEDULE_OF_RUN, (run_id,))
        return schedule_row(rows[0]) if rows else None

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._execute(f"SELECT {RUN_COLUMNS} FROM schedule_runs WHERE run_id = ?", (run_id,))
        return run_row(rows[0]) if rows else None


_SELECT_ONE = f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE user_id = ? AND schedule_id = ?"
