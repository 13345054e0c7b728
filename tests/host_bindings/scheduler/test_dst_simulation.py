"""Days of firing across DST changes: the scheduler service on a manual clock, schedules
created through the book, every firing checked against the minute-walking oracle.

Each window is three days around one change of one zone -- spring-forward and fall-back
in America/New_York, Europe/London, Australia/Lord_Howe (which shifts by 30 minutes) and
America/Santiago (southern hemisphere, changing at midnight). The clock jumps from one
due instant to the next (the earliest ``next_run_at``) and the scheduler fires what is due,
as it would polling every second."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from toolcage.host_bindings._scheduler import (
    ManualClock,
    ScheduleBook,
    Scheduler,
    SchedulerSettings,
    ScheduleStatus,
    TurnOutcome,
    TurnRequest,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.policies import Principal

from .oracle import Wall, cron_oracle, interval_oracle

pytestmark = pytest.mark.anyio

CRONS = {  # expression: follows real time (minute or hour field starts with '*')
    "0 9 * * *": False,
    "30 1 * * *": False,
    "0,30 0-3 * * *": False,
    "0 0 * * *": False,
    "0 * * * *": True,
    "45 * * * *": True,
    "*/15 * * * *": True,
    "*/20 1-2 * * *": True,
}
INTERVALS = (2700, 7200)  # 45 minutes, 2 hours
WINDOWS = [  # zone, a UTC instant a day before the change
    ("America/New_York", datetime(2026, 3, 7, 4, 3, tzinfo=UTC)),
    ("America/New_York", datetime(2026, 10, 31, 4, 3, tzinfo=UTC)),
    ("Europe/London", datetime(2026, 3, 28, 0, 3, tzinfo=UTC)),
    ("Europe/London", datetime(2026, 10, 24, 0, 3, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 4, 3, 14, 3, tzinfo=UTC)),
    ("Australia/Lord_Howe", datetime(2026, 10, 2, 15, 3, tzinfo=UTC)),
    ("America/Santiago", datetime(2026, 4, 3, 3, 3, tzinfo=UTC)),
    ("America/Santiago", datetime(2026, 9, 4, 4, 3, tzinfo=UTC)),
]
DAYS = 3


@pytest.mark.parametrize(("zone", "start"), WINDOWS, ids=[f"{z}-{s:%m}" for z, s in WINDOWS])
async def test_every_firing_matches_the_oracle(zone: str, start: datetime, tmp_path: Path) -> None:
    end = start + timedelta(days=DAYS)
    clock = ManualClock(start)
    fired: dict[str, list[datetime]] = {}

    async def record(request: TurnRequest) -> TurnOutcome:
        assert clock.now() == request.occurrence_at  # never late, never early
        fired.setdefault(request.schedule.schedule_id, []).append(request.occurrence_at)
        return TurnOutcome(output="ok")

    with EmbeddedScheduleStore(tmp_path / "state.db", url="sqlite:state.db") as store:
        book = ScheduleBook(store, clock=clock, min_interval_secs=60)
        ada = Principal("ada", channel_id="chat-7")
        expected: dict[str, list[datetime]] = {}
        for expression, real_time in CRONS.items():
            made = book.create(
                ada, goal=expression, cadence_type="cron", cadence_value=expression, timezone=zone
            )
            expected[made.schedule_id] = cron_oracle(
                Wall.of(expression), real_time, zone, start + timedelta(seconds=1), end
            )
        for seconds in INTERVALS:
            made = book.create(
                ada, goal="interval", cadence_type="interval", cadence_value=seconds, timezone=zone
            )
            expected[made.schedule_id] = interval_oracle(start, seconds, end)

        service = Scheduler(
            store, record, clock=clock, settings=SchedulerSettings(max_concurrent_runs=4)
        )
        while True:
            upcoming = [
                schedule.next_run_at
                for schedule in book.search("ada", limit=50).schedules
                if schedule.status is ScheduleStatus.ACTIVE and schedule.next_run_at is not None
            ]
            following = min(upcoming)
            if following > end:
                break
            clock.set(following)
            while await service.fire_due():  # four at a time, all at this instant
                pass

        for schedule_id, occurrences in expected.items():
            assert fired.get(schedule_id, []) == occurrences, book.get("ada", schedule_id).goal
            runs = store.list_runs("ada", schedule_id, 10_000)
            assert runs is not None
            assert {run.skipped for run in runs} <= {0}
    gaps = _gaps(expected)
    # The rule, stated on the results: real-time crons keep their spacing in real time.
    for expression in ("0 * * * *", "*/15 * * * *"):
        assert max(gaps[expression]) - min(gaps[expression]) <= timedelta(minutes=30)


def _gaps(expected: dict[str, list[datetime]]) -> dict[str, list[timedelta]]:
    by_expression = dict(
        zip(list(CRONS) + [str(s) for s in INTERVALS], expected.values(), strict=True)
    )
    return {
        expression: [b - a for a, b in itertools.pairwise(times)]
        for expression, times in by_expression.items()
    }


@pytest.mark.parametrize(
    ("zone", "expression", "count"),
    [
        ("America/New_York", "0 * * * *", 25),  # fall-back: 25 firings, one hour apart
        ("America/New_York", "*/15 * * * *", 100),
        ("America/New_York", "30 1 * * *", 1),
        ("America/New_York", "0,30 0-3 * * *", 8),  # the repeated 01:00-01:59 runs once
    ],
)
async def test_the_fall_back_day_in_new_york(
    zone: str, expression: str, count: int, tmp_path: Path
) -> None:
    # 2026-11-01 04:00Z is local midnight (EDT); the day is 25 hours long.
    start, end = datetime(2026, 11, 1, 4, tzinfo=UTC), datetime(2026, 11, 2, 5, tzinfo=UTC)
    clock = ManualClock(start - timedelta(seconds=1))
    fired: list[datetime] = []

    async def record(request: TurnRequest) -> TurnOutcome:
        fired.append(request.occurrence_at)
        return TurnOutcome(output="ok")

    with EmbeddedScheduleStore(tmp_path / "state.db", url="sqlite:state.db") as store:
        book = ScheduleBook(store, clock=clock, min_interval_secs=60)
        made = book.create(
            Principal("ada"), goal="x", cadence_type="cron", cadence_value=expression, timezone=zone
        )
        service = Scheduler(store, record, clock=clock)
        while (following := book.get("ada", made.schedule_id).next_run_at) is not None:
            if following >= end:
                break
            clock.set(following)
            await service.fire_due()
    assert len(fired) == count
    if expression == "0 * * * *":
        assert {b - a for a, b in itertools.pairwise(fired)} == {timedelta(hours=1)}
