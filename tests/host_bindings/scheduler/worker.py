"""A scheduler process for the multi-process tests: ``python worker.py MODE DB START STEP COUNT``.

``race``: sets its manual clock to ``START + k*STEP`` seconds for k in 1..COUNT and fires
what is due at each, printing the ids of the runs it fired. ``hang``: fires what is due at
``START`` with a turn that never ends (its lease: one minute), after creating the file
``DB.started``.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

import anyio
from toolcage.host_bindings._scheduler import (
    ManualClock,
    Scheduler,
    SchedulerSettings,
    TurnOutcome,
    TurnRequest,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore


async def quick(request: TurnRequest) -> TurnOutcome:
    return TurnOutcome(output=f"ran {request.schedule.schedule_id}")


async def main(mode: str, db: Path, start: datetime, step: int, count: int) -> None:
    clock = ManualClock(start)
    # The race's two manual clocks drift apart by up to COUNT steps: a lease longer than
    # that keeps one process from expiring the other's runs in flight.
    lease = timedelta(minutes=1) if mode == "hang" else timedelta(days=1)
    settings = SchedulerSettings(lease=lease, max_concurrent_runs=1000)
    with EmbeddedScheduleStore(db, url="sqlite:worker") as store:
        if mode == "hang":
            marker = db.with_name(db.name + ".started")

            async def hang(request: TurnRequest) -> TurnOutcome:
                # Whole or absent, never seen empty: written aside, then renamed into place.
                aside = marker.with_name(marker.name + ".tmp")
                aside.write_text(request.run_id)
                aside.replace(marker)
                await anyio.sleep_forever()
                raise AssertionError

            await Scheduler(store, hang, clock=clock, settings=settings).fire_due()
            return
        scheduler = Scheduler(store, quick, clock=clock, settings=settings)
        for k in range(1, count + 1):
            clock.set(start + timedelta(seconds=k * step))
            for run_id in await scheduler.fire_due():
                print(run_id, flush=True)


if __name__ == "__main__":
    mode, db, start, step, count = sys.argv[1:6]
    anyio.run(main, mode, Path(db), datetime.fromisoformat(start), int(step), int(count))
