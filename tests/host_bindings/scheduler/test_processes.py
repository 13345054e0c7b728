"""Scheduler processes sharing one store: each occurrence runs at most once and none is
lost; a process killed mid-run leaves its run recorded failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest
from toolcage.host_bindings import ChannelMessage
from toolcage.host_bindings._scheduler import (
    ManualClock,
    RunStatus,
    ScheduleBook,
    Scheduler,
    SchedulerSettings,
    TurnOutcome,
    TurnRequest,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.host_bindings._scheduler._tables import LEASE_EXPIRED
from toolcage.policies import Principal

from .conftest import START

WORKER = Path(__file__).with_name("worker.py")
SCHEDULES = 20
STEPS = 15


def start_worker(mode: str, db: Path, count: int = STEPS) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), mode, str(db), START.isoformat(), "60", str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class TestTwoProcesses:
    def test_every_occurrence_runs_at_most_once_and_none_is_lost(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, db_path: Path
    ) -> None:
        ids = [
            book.create(
                Principal("ada"), goal=f"task {n}", cadence_type="interval", cadence_value="60"
            ).schedule_id
            for n in range(SCHEDULES)
        ]
        workers = [start_worker("race", db_path) for _ in range(2)]
        outputs = [worker.communicate() for worker in workers]
        for worker, (_, err) in zip(workers, outputs, strict=True):
            assert worker.returncode == 0, err
        fired = [line for out, _ in outputs for line in out.split()]
        conn = apsw.Connection(str(db_path))
        rows: list[tuple[Any, ...]] = conn.execute(
            "SELECT schedule_id, occurrence_us, status, skipped, run_id FROM schedule_runs"
        ).fetchall()
        conn.close()
        assert sorted(fired) == sorted(row[4] for row in rows)  # each run fired by one
        assert max(Counter((row[0], row[1]) for row in rows).values()) == 1
        assert {row[2] for row in rows} == {"succeeded"}
        for schedule_id in ids:  # every occurrence 1..STEPS either ran or was skipped
            mine = [row for row in rows if row[0] == schedule_id]
            assert len(mine) + sum(row[3] for row in mine) == STEPS
        assert len(rows) + sum(row[3] for row in rows) == SCHEDULES * STEPS


class TestKilledMidRun:
    @pytest.mark.anyio
    async def test_the_run_is_recorded_failed_and_the_schedule_goes_on(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, db_path: Path
    ) -> None:
        schedule_id = book.create(
            Principal("ada"), goal="slow work", cadence_type="interval", cadence_value="60"
        ).schedule_id
        store.update_schedule("ada", schedule_id, {"next_run_at": START})
        worker = start_worker("hang", db_path)
        marker = db_path.with_name(db_path.name + ".started")
        try:
            while not marker.exists():
                assert worker.poll() is None, worker.communicate()
                await anyio.sleep(0.02)
        finally:
            os.kill(worker.pid, signal.SIGKILL)
            worker.communicate()
        (run,) = book.runs("ada", schedule_id)
        assert run.status is RunStatus.RUNNING

        async def quick(request: TurnRequest) -> TurnOutcome:
            return TurnOutcome(output="ok")

        sent: list[ChannelMessage] = []

        class Outbox:
            async def send(self, message: ChannelMessage) -> None:
                sent.append(message)

        later = ManualClock(START + timedelta(minutes=1, seconds=1))  # the worker's lease: 1 min
        survivor = Scheduler(
            store, quick, channel=Outbox(), clock=later, settings=SchedulerSettings()
        )
        assert len(await survivor.fire_due()) == 1
        assert [(m.data["status"], m.text) for m in sent] == [
            ("failed", LEASE_EXPIRED),
            ("succeeded", "ok"),
        ]
        runs = book.runs("ada", schedule_id)
        assert [(r.status, r.summary) for r in runs][1] == (RunStatus.FAILED, LEASE_EXPIRED)
        assert runs[1].run_id == marker.read_text()
        assert runs[0].status is RunStatus.SUCCEEDED
