"""The remote schedule store: schedules and runs on a libSQL server (libsql-client, HTTP).

The server's HTTP API has no interactive transactions; a ``batch`` is one. So each
change is one batch whose statements carry their own conditions: a claim updates the
schedule only if ``next_run_at`` is still the one the scheduler saw (and nothing runs),
inserts the run only if that update set the schedule's ``running_run_id`` to this run,
and clears it again if the insert found the occurrence already ran; the last statement
reports whether the run exists. The tables and their migrations are the embedded
store's (:mod:`._sqlite`), under the same version key.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import aiohttp
import libsql_client
from toolcage.host_bindings._store._libsql_client import BoundedClient
from toolcage.host_bindings._store._protocol import StoreError, StoreUnavailable
from toolcage.host_bindings._store._schema import META_TABLE

from ._model import OutputChunk, RunRecord, RunStatus, Schedule
from ._store import Claim, Fault, ScheduleFilter, Unreadable
from ._tables import (
    EDITABLE_COLUMNS,
    INSERT_SCHEDULE,
    LEASE_EXPIRED,
    MIGRATIONS,
    RUN_COLUMNS,
    SCHEDULE_COLUMNS,
    SCHEDULE_OF_RUN,
    VERSION_KEY,
    column_value,
    due_row,
    fault_statements,
    run_row,
    schedule_row,
    schedule_values,
    to_us,
)

Statement = tuple[str, Sequence[Any]]


class RemoteScheduleStore:
    """A :class:`~._store.ScheduleStore` on the libSQL server at ``endpoint``."""

    def __init__(
        self, endpoint: str, *, url: str, auth_token: str | None = None, timeout: float = 30.0
    ) -> None:
        self._url = url
        self._timeout = timeout
        self._lock = threading.Lock()
        self._closed = False
        self._client = BoundedClient(endpoint, auth_token=auth_token, timeout=timeout)
        try:
            self._migrate()
        except StoreError as exc:
            self.close()
            raise StoreUnavailable(url, str(exc)) from exc

    @property
    def url(self) -> str:
        return self._url

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._client.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            warnings.warn(f"schedule store {self._url!r} not closed", ResourceWarning, stacklevel=1)
            self.close()

    def __enter__(self) -> RemoteScheduleStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        with self._translated():
            return self._client.execute(sql, args)

    def _batch(self, statements: Sequence[Statement]) -> list[Any]:
        with self._translated():
            return self._client.batch(statements)

    @contextlib.contextmanager
    def _translated(self) -> Iterator[None]:
        if self._closed:
            raise StoreError(f"schedule store {self._url!r} is closed")
        try:
            yield
        except libsql_client.LibsqlError as exc:
            raise StoreError(f"schedule store {self._url!r} failed: {exc}") from exc
        except TimeoutError as exc:
            raise StoreError(
                f"schedule store {self._url!r} did not answer within {self._timeout} s"
            ) from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise StoreError(f"schedule store {self._url!r} is unreachable: {exc}") from exc

    def _migrate(self) -> None:
        self._execute(META_TABLE)
        for _ in range(2):  # a second pass when another host migrated at the same time
            version = self._version()
            if version > len(MIGRATIONS):
                raise StoreError(
                    f"schedule tables of {self._url!r} have version {version}, newer than"
                    f" this toolcage's {len(MIGRATIONS)}"
                )
            if version == len(MIGRATIONS):
                return
            statements: list[Statement] = [
                (statement, ()) for batch in MIGRATIONS[version:] for statement in batch
            ]
            statements.append(
                (
                    "INSERT OR REPLACE INTO store_meta VALUES (?, ?)",
                    (VERSION_KEY, str(len(MIGRATIONS))),
                )
            )
            with contextlib.suppress(StoreError):
                self._batch(statements)
        if self._version() != len(MIGRATIONS):
            raise StoreError(f"schedule tables of {self._url!r} could not be migrated")

    def _version(self) -> int:
        found = self._execute("SELECT value FROM store_meta WHERE key = ?", (VERSION_KEY,)).rows
        return int(found[0][0]) if found else 0

    # -- owners ------------------------------------------------------------------------

    def insert_schedule(self, schedule: Schedule) -> None:
        self._execute(
            INSERT_SCHEDULE,
            schedule_values(schedule),
        )

    def get_schedule(self, user_id: str, schedule_id: str) -> Schedule | None:
        rows = self._execute(_SELECT_ONE, (user_id, schedule_id)).rows
        return schedule_row(tuple(rows[0])) if rows else None

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
        return [schedule_row(tuple(row)) for row in page.rows], int(total.rows[0][0])

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
        rows = self._batch(statements)[-1].rows
        return schedule_row(tuple(rows[0])) if rows else None

    def delete_schedule(self, user_id: str, schedule_id: str) -> bool:
        results = self._batch(
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
        return bool(results[1].rows_affected)

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
        if not found.rows:
            return None
        return [run_row(tuple(row)) for row in rows.rows]

    def run_output(
        self, user_id: str, run_id: str, offset: int, max_chars: int
    ) -> OutputChunk | None:
        rows = self._execute(
            "SELECT substr(output, ?, ?), length(output) FROM schedule_runs"
            " WHERE user_id = ? AND run_id = ?",
            (offset + 1, max_chars, user_id, run_id),
        ).rows
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
        ).rows
        return [due_row(tuple(row)) for row in rows]

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
        return int(results[-1].rows[0][0]) == 1

    def record_fault(self, fault: Fault) -> bool:
        results = self._batch(fault_statements(fault))
        return bool(results[0].rows_affected == 1)

    def renew(self, run_id: str, owner: str, lease_until: datetime) -> bool:
        result = self._execute(
            "UPDATE schedule_runs SET lease_us = ?"
            " WHERE run_id = ? AND owner = ? AND status = 'running'",
            (to_us(lease_until), run_id, owner),
        )
        return bool(result.rows_affected == 1)

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
        results = self._batch(
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
        return bool(results[0].rows_affected == 1)

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
        return [str(row[0]) for row in results[0].rows]

    def schedule_of_run(self, run_id: str) -> Schedule | None:
        rows = self._execute(SCHEDULE_OF_RUN, (run_id,)).rows
        return schedule_row(tuple(rows[0])) if rows else None

    def get_run(self, run_id: str) -> RunRecord | None:
        rows = self._execute(
            f"SELECT {RUN_COLUMNS} FROM schedule_runs WHERE run_id = ?", (run_id,)
        ).rows
        return run_row(tuple(rows[0])) if rows else None


_SELECT_ONE = f"SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE user_id = ? AND schedule_id = ?"
