"""``toolcage scheduler``: a real process firing a due schedule as a turn on a model
server on 127.0.0.1, notifying on stdout, and stopping cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
from toolcage.host_bindings._scheduler import (
    ManualClock,
    RunStatus,
    ScheduleBook,
    ScheduleStatus,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.host_bindings._scheduler._tables import LEASE_EXPIRED
from toolcage.policies import Principal

from ..fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply

COMMAND = [sys.executable, "-m", "toolcage.runtime", "scheduler"]
GOAL = "Count the new posts on the team feed"


def write_config(tmp_path: Path, scheduler: str = "") -> Path:
    (tmp_path / "workspace").mkdir()
    path = tmp_path / "toolcage.toml"
    path.write_text(f'[state]\nurl = "state.db"\n{scheduler}')
    return path


def start(config: Path, base_url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            *COMMAND,
            "--config",
            str(config),
            "--provider",
            "openai_chat",
            "--base-url",
            base_url,
            "--model",
            MODEL,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TOOLCAGE_MODEL_API_KEY": API_KEY},
    )


def due_schedule(db: Path) -> str:
    """An every-minute schedule created ten minutes ago: due now, with missed ones."""
    with EmbeddedScheduleStore(db, url="sqlite:state.db") as store:
        clock = ManualClock(datetime.now(UTC) - timedelta(minutes=10))
        book = ScheduleBook(store, clock=clock, min_interval_secs=60)
        schedule = book.create(
            Principal("ada", channel_id="chat-7"),
            goal=GOAL,
            cadence_type="interval",
            cadence_value="60",
        )
        return schedule.schedule_id


class TestSchedulerCommand:
    def test_fires_notifies_and_stops_on_sigterm(self, tmp_path: Path) -> None:
        config = write_config(tmp_path)
        schedule_id = due_schedule(tmp_path / "state.db")
        model = FakeModel("openai_chat", False, [Reply("3 new posts")])
        with FakeModelServer(model) as base_url:
            process = start(config, base_url)
            try:
                assert process.stdout is not None
                line = process.stdout.readline()  # the notification, once the run ended
            finally:
                process.send_signal(signal.SIGTERM)
                _out, err = process.communicate()
        assert process.returncode == 0, err
        assert "Traceback" not in err
        message = json.loads(line)
        assert (message["kind"], message["user_id"], message["channel_id"]) == (
            "schedule_run",
            "ada",
            "chat-7",
        )
        assert message["text"] == "3 new posts"
        assert message["data"]["schedule_id"] == schedule_id
        assert message["data"]["skipped"] >= 8
        assert f"firing schedule {schedule_id}" in err
        assert "received SIGTERM; stopping" in err
        sent = model.requests[0].body["messages"]
        assert any(m.get("content") == GOAL for m in sent)
        with EmbeddedScheduleStore(tmp_path / "state.db", url="sqlite:state.db") as store:
            (run,) = store.list_runs("ada", schedule_id, 5) or []
        assert run.status is RunStatus.SUCCEEDED

    def test_refuses_without_a_model(self, tmp_path: Path) -> None:
        done = subprocess.run(
            [*COMMAND, "--config", str(write_config(tmp_path))],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "TOOLCAGE_MODEL_API_KEY"},
            check=False,
        )
        assert done.returncode == 2
        assert "--provider, --base-url, --model, $TOOLCAGE_MODEL_API_KEY" in done.stderr
        assert "Traceback" not in done.stderr

    def test_a_killed_scheduler_blocks_its_schedule_for_the_configured_lease_only(
        self, tmp_path: Path
    ) -> None:
        config = write_config(tmp_path, "[scheduler]\nlease_secs = 30\npoll_secs = 0.2\n")
        db = tmp_path / "state.db"
        schedule_id = due_schedule(db)
        model = FakeModel("openai_chat", False, [Reply("too late", stall=600)])
        with FakeModelServer(model) as base_url:
            killed = start(config, base_url)
            try:
                model.requested.wait()  # the run is claimed and its turn under way
            finally:
                killed.kill()
                killed.communicate()
            with EmbeddedScheduleStore(db, url="sqlite:state.db") as store:
                (run,) = store.list_runs("ada", schedule_id, 5) or []
            assert run.status is RunStatus.RUNNING
            conn = apsw.Connection(str(db))
            try:
                lease = conn.execute(
                    "SELECT lease_us - started_us FROM schedule_runs WHERE run_id = ?",
                    (run.run_id,),
                ).fetchall()
            finally:
                conn.close()
            assert lease == [(30_000_000,)]  # the configured lease, not a fixed one
            survivor = start(config, base_url)
            try:
                assert survivor.stdout is not None
                line = survivor.stdout.readline()  # once the lease has run out
            finally:
                survivor.send_signal(signal.SIGTERM)
                _out, err = survivor.communicate()
        assert survivor.returncode == 0, err
        message = json.loads(line)
        assert (message["data"]["run_id"], message["data"]["status"]) == (run.run_id, "failed")
        assert message["text"] == LEASE_EXPIRED
        with EmbeddedScheduleStore(db, url="sqlite:state.db") as store:
            ended = store.get_run(run.run_id)
            schedule = store.get_schedule("ada", schedule_id)
        assert ended is not None
        assert ended.status is RunStatus.FAILED
        assert ended.ended_at is not None
        assert ended.ended_at - run.started_at >= timedelta(seconds=30)
        assert schedule is not None
        assert schedule.status is ScheduleStatus.ACTIVE

    def test_a_bad_scheduler_setting_is_a_clear_error(self, tmp_path: Path) -> None:
        done = subprocess.run(
            [
                *COMMAND,
                "--config",
                str(write_config(tmp_path, "[scheduler]\nmax_concurrent_runs = 0\n")),
                "--provider",
                "openai_chat",
                "--base-url",
                "http://127.0.0.1:9",
                "--model",
                MODEL,
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "TOOLCAGE_MODEL_API_KEY": API_KEY},
            check=False,
        )
        assert done.returncode == 2
        assert "scheduler.max_concurrent_runs" in done.stderr
        assert "greater than or equal to 1 (got 0)" in done.stderr
        assert "Traceback" not in done.stderr
