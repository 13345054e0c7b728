"""The six scheduler tools: WASI guests through ``Runtime.execute``, on the embedded state
store of a config, each call reaching only the calling user's schedules and runs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from toolcage.host_bindings import Scheduler, TurnOutcome, TurnRequest
from toolcage.host_bindings._scheduler._clock import ManualClock
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.policies import ConfigError
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

pytestmark = pytest.mark.anyio

CONFIG = '[state]\nurl = "data/state.db"\n'
TOOLS = (
    "schedule_create",
    "schedule_delete",
    "schedule_edit",
    "schedule_run_output",
    "schedule_runs",
    "schedule_search",
)
DAILY = {"goal": "Summarise my inbox.", "cadence_type": "cron", "cadence_value": "0 9 * * *"}


@dataclass
class Box:
    runtime: Runtime
    root: Path

    async def call(
        self, tool: str, user: str = "ada", channel: str | None = "chat-1", **args: Any
    ) -> ToolResult:
        ctx = ToolExecutionContext(user_id=user, channel_id=channel)
        return await self.runtime.execute(tool, args, ctx)

    async def ok(self, tool: str, **args: Any) -> Any:
        result = await self.call(tool, **args)
        assert not result.is_error, result.output_text
        return json.loads(result.output_text)

    async def fails(self, tool: str, error_type: str, **args: Any) -> str:
        result = await self.call(tool, **args)
        assert result.is_error, result.output_text
        assert result.error is not None
        assert result.error.kind.value == error_type, result.error.message
        return result.error.message


async def runtime_in(root: Path, text: str) -> Runtime:
    (root / "workspace").mkdir(exist_ok=True)
    (root / "toolcage.toml").write_text(text)
    return Runtime.from_config(root / "toolcage.toml")


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Box]:
    async with await runtime_in(tmp_path, CONFIG) as runtime:
        yield Box(runtime, tmp_path)


def future(days: int = 3) -> str:
    return (datetime.now(UTC) + timedelta(days=days)).replace(microsecond=0).isoformat()


class TestScheduleCreate:
    async def test_returns_the_id_the_next_run_and_the_status(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY, timezone="Europe/Paris", name="inbox")
        assert made["schedule_id"].startswith("sched-")
        assert made["status"] == "active"
        assert made["name"] == "inbox"
        next_run = datetime.fromisoformat(made["next_run_at"])
        assert next_run > datetime.now(UTC)
        assert next_run.astimezone(ZoneInfo("Europe/Paris")).hour == 9

    async def test_remembers_the_channel_of_the_call(self, box: Box) -> None:
        await box.ok("schedule_create", **DAILY, channel="room-42")
        [shown] = (await box.ok("schedule_search"))["schedules"]
        assert shown["channel_id"] == "room-42"

    @pytest.mark.parametrize(
        ("args", "says"),
        [
            ({"cadence_type": "cron", "cadence_value": "61 9 * * *"}, "cadence_value"),
            ({"cadence_type": "cron", "cadence_value": "0 9 * *"}, "cadence_value"),
            ({"cadence_type": "interval", "cadence_value": "30"}, "minimum interval is 60"),
            ({"cadence_type": "once", "cadence_value": "2001-01-01T09:00:00Z"}, "future"),
            ({"cadence_type": "once", "cadence_value": "next tuesday"}, "RFC 3339"),
            (
                {"cadence_type": "cron", "cadence_value": "0 9 * * *", "timezone": "Mars/Olympus"},
                "timezone",
            ),
        ],
    )
    async def test_bad_cadences_are_refused_with_what_to_change(
        self, box: Box, args: dict[str, str], says: str
    ) -> None:
        message = await box.fails("schedule_create", "validation_error", goal="x", **args)
        assert says in message
        assert (await box.ok("schedule_search"))["total"] == 0

    async def test_a_one_off_time_in_the_future_is_accepted(self, box: Box) -> None:
        at = future()
        made = await box.ok("schedule_create", goal="x", cadence_type="once", cadence_value=at)
        assert datetime.fromisoformat(made["next_run_at"]) == datetime.fromisoformat(at)

    async def test_budgets_are_not_arguments(self, box: Box) -> None:
        message = await box.fails("schedule_create", "validation_error", **DAILY, max_cost=100)
        assert "max_cost" in message

    async def test_the_minimum_interval_is_the_operators(self, tmp_path: Path) -> None:
        text = CONFIG + "[scheduler]\nmin_interval_secs = 3600\n"
        async with await runtime_in(tmp_path, text) as runtime:
            box = Box(runtime, tmp_path)
            message = await box.fails(
                "schedule_create",
                "validation_error",
                goal="x",
                cadence_type="interval",
                cadence_value="30m",
            )
            assert "3600" in message
            await box.ok("schedule_create", goal="x", cadence_type="interval", cadence_value="2h")


class TestScheduleSearch:
    async def test_pages_with_total_remaining_and_a_hint(self, box: Box) -> None:
        for i in range(7):
            await box.ok("schedule_create", **DAILY, name=f"job {i}")
        first = await box.ok("schedule_search", limit=3)
        assert (first["total"], first["remaining"], len(first["schedules"])) == (7, 4, 3)
        assert "offset=3" in first["hint"]
        last = await box.ok("schedule_search", limit=3, offset=6)
        assert (last["remaining"], len(last["schedules"])) == (0, 1)
        assert "last page" in last["hint"]
        seen = {s["name"] for page in (first, last) for s in page["schedules"]}
        seen |= {
            s["name"] for s in (await box.ok("schedule_search", limit=3, offset=3))["schedules"]
        }
        assert seen == {f"job {i}" for i in range(7)}

    async def test_the_limit_defaults_to_twenty_and_stops_at_fifty(self, box: Box) -> None:
        for i in range(21):
            await box.ok("schedule_create", **DAILY, name=f"job {i}")
        assert len((await box.ok("schedule_search"))["schedules"]) == 20
        await box.fails("schedule_search", "validation_error", limit=51)
        await box.fails("schedule_search", "validation_error", offset=-1)

    async def test_filters_by_name_status_cadence_and_notification(self, box: Box) -> None:
        a = await box.ok("schedule_create", **DAILY, name="Morning inbox")
        await box.ok(
            "schedule_create",
            goal="x",
            cadence_type="interval",
            cadence_value="1h",
            name="hourly check",
            notification="never",
        )
        await box.ok("schedule_edit", schedule_id=a["schedule_id"], status="paused")
        by_name = await box.ok("schedule_search", name="INBOX")
        assert [s["name"] for s in by_name["schedules"]] == ["Morning inbox"]
        paused = await box.ok("schedule_search", status="paused")
        assert [s["schedule_id"] for s in paused["schedules"]] == [a["schedule_id"]]
        hourly = await box.ok("schedule_search", cadence_type="interval", notification="never")
        assert [s["name"] for s in hourly["schedules"]] == ["hourly check"]
        none = await box.ok("schedule_search", name="nothing like it")
        assert none["total"] == 0
        assert "no schedules match" in none["hint"]


class TestScheduleEdit:
    async def test_a_partial_patch_changes_only_what_it_names(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY, name="inbox")
        edited = await box.ok("schedule_edit", schedule_id=made["schedule_id"], goal="New goal.")
        assert edited["goal"] == "New goal."
        assert (edited["name"], edited["cadence_value"]) == ("inbox", "0 9 * * *")

    async def test_pause_and_resume(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        paused = await box.ok("schedule_edit", schedule_id=made["schedule_id"], status="paused")
        assert paused["status"] == "paused"
        resumed = await box.ok("schedule_edit", schedule_id=made["schedule_id"], status="active")
        assert resumed["status"] == "active"
        assert datetime.fromisoformat(resumed["next_run_at"]) > datetime.now(UTC)

    async def test_a_new_cadence_type_needs_its_value(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        message = await box.fails(
            "schedule_edit",
            "validation_error",
            schedule_id=made["schedule_id"],
            cadence_type="interval",
        )
        assert "cadence_value" in message
        edited = await box.ok(
            "schedule_edit",
            schedule_id=made["schedule_id"],
            cadence_type="interval",
            cadence_value="2h",
        )
        assert edited["cadence_type"] == "interval"

    async def test_an_empty_patch_is_refused(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        message = await box.fails(
            "schedule_edit", "validation_error", schedule_id=made["schedule_id"]
        )
        assert "nothing to change" in message

    async def test_completed_is_not_a_status_to_set(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        await box.fails(
            "schedule_edit",
            "validation_error",
            schedule_id=made["schedule_id"],
            status="completed",
        )


class TestScheduleDelete:
    async def test_deletes_once(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        gone = await box.ok("schedule_delete", schedule_id=made["schedule_id"])
        assert gone == {"schedule_id": made["schedule_id"], "deleted": True}
        await box.fails("schedule_delete", "not_found", schedule_id=made["schedule_id"])
        assert (await box.ok("schedule_search"))["total"] == 0


class TestIsolation:
    async def test_another_users_schedule_is_a_missing_one(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY, user="ada")
        sid = made["schedule_id"]
        assert (await box.ok("schedule_search", user="bob"))["total"] == 0
        missing = await box.fails(
            "schedule_edit", "not_found", user="bob", schedule_id="sched-x", goal="y"
        )
        stolen = await box.fails(
            "schedule_edit", "not_found", user="bob", schedule_id=sid, goal="y"
        )
        assert stolen == missing.replace("sched-x", sid)
        await box.fails("schedule_delete", "not_found", user="bob", schedule_id=sid)
        await box.fails("schedule_runs", "not_found", user="bob", schedule_id=sid)
        assert (await box.ok("schedule_search", user="ada"))["total"] == 1


async def fire(root: Path, at: datetime, output: str) -> list[str]:
    """Run every schedule due at ``at`` with a turn that answers ``output``."""

    async def turn(request: TurnRequest) -> TurnOutcome:
        return TurnOutcome(output=f"{output} ({request.schedule.goal})", cost=0.25)

    with EmbeddedScheduleStore(root / "data/state.db", url="sqlite:state.db") as store:
        return await Scheduler(store, turn, clock=ManualClock(at)).fire_due()


class TestRuns:
    async def test_runs_list_metadata_and_the_output_pages(self, box: Box) -> None:
        made = await box.ok(
            "schedule_create", goal="Count.", cadence_type="interval", cadence_value="60"
        )
        sid = made["schedule_id"]
        assert (await box.ok("schedule_runs", schedule_id=sid))["runs"] == []
        at = datetime.fromisoformat(made["next_run_at"])
        [run_id] = await fire(box.root, at + timedelta(seconds=1), "x" * 9000)
        [run] = (await box.ok("schedule_runs", schedule_id=sid))["runs"]
        assert run["run_id"] == run_id
        assert run["status"] == "succeeded"
        assert run["cost"] == 0.25
        assert "output" not in run
        first = await box.ok("schedule_run_output", run_id=run_id)
        assert (first["offset"], len(first["text"])) == (0, 4000)
        rest = await box.ok("schedule_run_output", run_id=run_id, offset=8000, max_chars=8000)
        assert rest["remaining"] == 0
        assert rest["text"].endswith("(Count.)")
        await box.fails("schedule_run_output", "validation_error", run_id=run_id, max_chars=100)
        await box.fails("schedule_run_output", "not_found", user="bob", run_id=run_id)
        await box.fails("schedule_runs", "validation_error", schedule_id=sid, limit=21)

    async def test_a_paused_schedule_does_not_run_until_resumed(self, box: Box) -> None:
        made = await box.ok(
            "schedule_create", goal="Count.", cadence_type="interval", cadence_value="60"
        )
        sid = made["schedule_id"]
        await box.ok("schedule_edit", schedule_id=sid, status="paused")
        later = datetime.now(UTC) + timedelta(hours=1)
        assert await fire(box.root, later, "paused") == []
        resumed = await box.ok("schedule_edit", schedule_id=sid, status="active")
        at = datetime.fromisoformat(resumed["next_run_at"])
        assert len(await fire(box.root, at + timedelta(seconds=1), "resumed")) == 1
        [run] = (await box.ok("schedule_runs", schedule_id=sid))["runs"]
        assert run["summary"].startswith("resumed")


class TestResultsFit:
    """At their maxima the results stay whole JSON under the output limit (16 KiB)."""

    async def test_wide_output_is_read_in_whole_chunks_to_its_end(self, box: Box) -> None:
        made = await box.ok(
            "schedule_create", goal="Count.", cadence_type="interval", cadence_value="60"
        )
        at = datetime.fromisoformat(made["next_run_at"])
        [run_id] = await fire(box.root, at + timedelta(seconds=1), "\U0001f600" * 20_000)
        text, offset = "", 0
        while True:
            result = await box.call(
                "schedule_run_output", run_id=run_id, offset=offset, max_chars=8000
            )
            assert not result.is_error, result.output_text[:300]
            assert len(result.output_text.encode()) <= 16 * 1024
            chunk = json.loads(result.output_text)
            assert chunk["offset"] == offset
            text += chunk["text"]
            offset += len(chunk["text"])
            if not chunk["remaining"]:
                break
            assert f"offset={offset}" in chunk["hint"]
        assert text == "\U0001f600" * 20_000 + " (Count.)"

    async def test_a_page_of_long_wide_goals_fits_and_says_what_was_cut(self, box: Box) -> None:
        for n in range(12):
            goal = f"{n:02d}" + "\u00e9" * 7998
            await box.ok(
                "schedule_create", goal=goal, cadence_type="cron", cadence_value="0 9 * * *"
            )
        seen = 0
        offset = 0
        while True:
            result = await box.call("schedule_search", limit=50, offset=offset)
            assert not result.is_error, result.output_text[:300]
            assert len(result.output_text.encode()) <= 16 * 1024
            page = json.loads(result.output_text)
            assert page["total"] == 12
            for schedule in page["schedules"]:
                assert schedule["full_chars"] == 8000
                assert schedule["goal"].endswith("\u2026")
            assert "cut to fit the output limit" in page["hint"]
            seen += len(page["schedules"])
            offset += len(page["schedules"])
            if not page["remaining"]:
                break
            assert f"offset={offset}" in page["hint"]
        assert seen == 12


class TestConfig:
    async def test_disabled_scheduler_has_no_schedule_tools(self, tmp_path: Path) -> None:
        async with await runtime_in(tmp_path, CONFIG + "[scheduler]\nenabled = false\n") as rt:
            names = {d.name for d in rt.registry.declarations("default")}
            assert not names & set(TOOLS)
            assert "send_media" in names

    async def test_without_state_there_are_no_schedule_tools(self, tmp_path: Path) -> None:
        async with await runtime_in(tmp_path, "[state]\nenabled = false\n") as rt:
            names = {d.name for d in rt.registry.declarations("default")}
            assert not names & set(TOOLS)

    @pytest.mark.parametrize(
        ("text", "key"),
        [
            ("[scheduler]\nmin_interval_secs = 0\n", "scheduler.min_interval_secs"),
            ("[scheduler]\nmax_turns = -1\n", "scheduler.max_turns"),
            ("[scheduler]\nmax_cost = 0\n", "scheduler.max_cost"),
            ("[scheduler]\nbudget = 3\n", "scheduler.budget: unknown key"),
        ],
    )
    async def test_bad_values_fail_at_load_naming_the_key(
        self, tmp_path: Path, text: str, key: str
    ) -> None:
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            await runtime_in(tmp_path, text)

    async def test_the_schedule_tools_are_listed(self, box: Box) -> None:
        names = {d.name for d in box.runtime.registry.declarations("default")}
        assert set(TOOLS) <= names
