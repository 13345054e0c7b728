"""The scheduler at 10,000 schedules: the due-scan, and the cost of firing one run.

10,000 schedules of 100 users, next runs spread over 30 days (a fifth of them paused),
in an embedded store. The due-scan is :meth:`ScheduleStore.due_schedules` at an instant
when 10 are due (what a scheduler runs every poll); the firing overhead is one
:meth:`Scheduler.fire_due` pass that claims, runs (a turn that returns at once), records
and notifies one occurrence -- everything a scheduled run costs beside ``run_turn``. The
cadence lines time what a claim computes for a ``*/15`` cron in Europe/London: its next
occurrence, and the catch-up (latest occurrence and exact skipped count) after 30 days down.
"""

from __future__ import annotations

import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import apsw
from toolcage.host_bindings import ChannelMessage
from toolcage.host_bindings._scheduler import (
    Cadence,
    CadenceType,
    ManualClock,
    Scheduler,
    ScheduleStatus,
    TurnOutcome,
    TurnRequest,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore

from .stats import ms, summarise

SCHEDULES = 10_000
USERS = 100
DUE = 10
SCANS = 500
FIRINGS = 200
SCAN_TARGET = 0.005
START = datetime(2026, 6, 1, tzinfo=UTC)


def _us(moment: datetime) -> int:
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1_000_000)


def _fill(path: Path) -> None:
    rows = []
    for n in range(SCHEDULES):
        due = START - timedelta(minutes=n) if n < DUE else START + timedelta(minutes=n * 4 + 1)
        rows.append(
            (
                f"sched-{n:05d}",
                f"user-{n % USERS}",
                f"schedule {n}",
                "Summarise the news",
                "interval",
                "3600",
                "UTC",
                "never",
                "paused" if n % 5 == 4 and n >= DUE else "active",
                None,
                _us(due),
                _us(START),
                _us(START),
                None,
            )
        )
    conn = apsw.Connection(str(path))
    with conn:
        conn.executemany(
            "INSERT INTO schedules (schedule_id, user_id, name, goal, cadence_type,"
            " cadence_value, timezone, notification, status, channel_id, next_run_us,"
            " created_us, updated_us, last_run_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows,
        )
    conn.close()


async def _quick(request: TurnRequest) -> TurnOutcome:
    return TurnOutcome(output="nothing new")


class _Null:
    async def send(self, message: ChannelMessage) -> None:
        del message


def run() -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        with EmbeddedScheduleStore(path, url="sqlite:bench") as store:
            _fill(path)
            store.due_schedules(START, 50)  # warm the page cache
            scans = []
            for _ in range(SCANS):
                started = time.perf_counter()
                found = store.due_schedules(START, 50)
                scans.append(time.perf_counter() - started)
            assert len(found) == DUE
            median, p99 = summarise(scans)
            verdict = "meets" if median <= SCAN_TARGET else "MISSES"
            lines.append(
                f"due-scan, {SCHEDULES:,} schedules, {DUE} due  p50 {ms(median)}  p99 {ms(p99)}"
                f"  ({verdict} the {SCAN_TARGET * 1e3:.0f} ms target)"
            )
            clock = ManualClock(START)
            scheduler = Scheduler(store, _quick, channel=_Null(), clock=clock)
            firings = anyio.run(_fire, store, scheduler, clock)
            median, p99 = summarise(firings)
            lines.append(
                f"fire_due, one run (claim, record, notify)  p50 {ms(median)}  p99 {ms(p99)}"
            )
    lines.extend(_cadence())
    return lines


def _cadence() -> list[str]:
    cadence = Cadence.stored(CadenceType.CRON, "*/15 * * * *", "Europe/London")
    due = cadence.next_after(START)
    assert due is not None
    nexts, catch_ups = [], []
    moment = due
    for _ in range(FIRINGS):
        started = time.perf_counter()
        following = cadence.next_after(moment)
        nexts.append(time.perf_counter() - started)
        assert following is not None
        moment = following
        started = time.perf_counter()
        caught = cadence.catch_up(due, due + timedelta(days=30, minutes=7))
        catch_ups.append(time.perf_counter() - started)
    assert caught.skipped == 30 * 96
    median, p99 = summarise(nexts)
    lines = [f"cron */15 next occurrence  p50 {ms(median)}  p99 {ms(p99)}"]
    median, p99 = summarise(catch_ups)
    lines.append(f"cron */15 catch-up after 30 days down  p50 {ms(median)}  p99 {ms(p99)}")
    return lines


async def _fire(
    store: EmbeddedScheduleStore, scheduler: Scheduler, clock: ManualClock
) -> list[float]:
    while await scheduler.fire_due():  # the DUE ones, due since before START
        pass
    samples = []
    for n in range(FIRINGS):
        schedule_id = f"sched-{DUE + n:05d}"
        store.update_schedule(
            f"user-{(DUE + n) % USERS}",
            schedule_id,
            {"next_run_at": clock.now(), "status": ScheduleStatus.ACTIVE},
        )
        started = time.perf_counter()
        fired = await scheduler.fire_due()
        samples.append(time.perf_counter() - started)
        assert len(fired) == 1
    return samples


if __name__ == "__main__":
    print("\n".join(run()))
