"""Scheduled runs as agent turns: ``ScheduledTurns`` on ``Runtime.from_config`` with a
scripted model on 127.0.0.1, driven by the scheduler on a manual clock."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from toolcage.host_bindings._scheduler import (
    ManualClock,
    RunStatus,
    ScheduleBook,
    Scheduler,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.runtime import HttpModelClient, Principal, Runtime, ToolExecutionContext, tool
from toolcage.runtime._channel import JsonLinesChannel
from toolcage.runtime.agent._scheduled_turns import NOTHING_TO_REPORT, SYSTEM_PROMPT, ScheduledTurns

from ..fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply

pytestmark = pytest.mark.anyio

START = datetime(2026, 3, 20, 12, tzinfo=UTC)
CONFIG = """
[scheduler]
max_turns = 3
"""
SEEN: list[tuple[str, str | None]] = []


@tool
async def whoami(ctx: ToolExecutionContext) -> str:
    """Say whose call this is."""
    SEEN.append((ctx.user_id, ctx.channel_id))
    return ctx.user_id


@dataclass
class Rig:
    model: FakeModel
    book: ScheduleBook
    scheduler: Scheduler
    clock: ManualClock
    lines: io.StringIO

    def notifications(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines.getvalue().splitlines()]


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    model = FakeModel("openai_chat", False, [])
    lines = io.StringIO()
    channel = JsonLinesChannel(lines)
    with FakeModelServer(model) as base_url:
        client = HttpModelClient.for_provider(
            "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
        )
        runtime = Runtime.from_config(tmp_path / "toolcage.toml", tools=[whoami], channel=channel)
        with EmbeddedScheduleStore(tmp_path / "state.db", url="sqlite:state.db") as store:
            clock = ManualClock(START)
            book = ScheduleBook(store, clock=clock)
            scheduler = Scheduler(
                store, ScheduledTurns(runtime, client), channel=channel, clock=clock
            )
            async with client, runtime:
                yield Rig(model, book, scheduler, clock, lines)


def hourly(rig: Rig, notification: str = "conditional") -> str:
    return rig.book.create(
        Principal("ada", channel_id="chat-7"),
        goal="Check whose schedule this is",
        cadence_type="cron",
        cadence_value="0 * * * *",
        notification=notification,
    ).schedule_id


class TestScheduledTurns:
    async def test_the_goal_runs_as_the_owner_and_notifies(self, rig: Rig) -> None:
        SEEN.clear()
        rig.model.script[:] = [Reply(calls=[("c1", "whoami", "{}")]), Reply("It is ada's.")]
        schedule_id = hourly(rig)
        rig.clock.advance(timedelta(hours=1))
        await rig.scheduler.fire_due()
        assert SEEN == [("ada", "chat-7")]
        first = rig.model.requests[0].body["messages"]
        assert first[-1] == {"role": "user", "content": "Check whose schedule this is"}
        (run,) = rig.book.runs("ada", schedule_id)
        assert (run.status, run.summary) == (RunStatus.SUCCEEDED, "It is ada's.")
        (line,) = rig.notifications()
        assert (line["kind"], line["channel_id"], line["text"]) == (
            "schedule_run",
            "chat-7",
            "It is ada's.",
        )

    async def test_nothing_to_report_does_not_notify_a_conditional_schedule(self, rig: Rig) -> None:
        rig.model.script[:] = [Reply(NOTHING_TO_REPORT)]
        schedule_id = hourly(rig)
        rig.clock.advance(timedelta(hours=1))
        await rig.scheduler.fire_due()
        assert rig.book.runs("ada", schedule_id)[0].status is RunStatus.SUCCEEDED
        assert rig.notifications() == []

    async def test_the_operators_max_turns_stops_the_run(self, rig: Rig) -> None:
        rig.model.script[:] = [Reply(calls=[(f"c{n}", "whoami", "{}")]) for n in range(10)]
        schedule_id = hourly(rig, notification="always")
        rig.clock.advance(timedelta(hours=1))
        await rig.scheduler.fire_due()
        assert len(rig.model.requests) == 3
        (run,) = rig.book.runs("ada", schedule_id)
        assert (run.status, run.summary) == (RunStatus.FAILED, "the turn stopped: max_rounds")
        assert rig.notifications()[0]["data"]["status"] == "failed"


WRITER = """
[agents.writer]
tools = ["whoami", "schedule_create"]
model = "fast"
system_prompt = "You write briefly."
"""


@contextlib.asynccontextmanager
async def writer_fired(tmp_path: Path, models: list[str]) -> AsyncIterator[list[FakeModel]]:
    """A ``writer`` schedule fired with the host's ``default`` client and ``models`` (one
    scripted model each, yielded in that order after the default one)."""
    (tmp_path / "workspace").mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG + WRITER)
    fakes = [FakeModel("openai_chat", False, [Reply("written")]) for _ in range(len(models) + 1)]
    with contextlib.ExitStack() as servers:
        clients = [
            HttpModelClient.for_provider(
                "openai_chat",
                base_url=servers.enter_context(FakeModelServer(fake)),
                api_key=API_KEY,
                model=MODEL,
            )
            for fake in fakes
        ]
        runtime = Runtime.from_config(tmp_path / "toolcage.toml", tools=[whoami])
        with EmbeddedScheduleStore(tmp_path / "state.db", url="sqlite:state.db") as store:
            clock = ManualClock(START)
            ScheduleBook(store, clock=clock, profiles={"writer"}).create(
                Principal("ada", "writer", "chat-1", channel_id="chat-7"),
                goal="Write the note",
                cadence_type="cron",
                cadence_value="0 * * * *",
            )
            turns = ScheduledTurns(
                runtime, clients[0], models=dict(zip(models, clients[1:], strict=True))
            )
            async with runtime, contextlib.AsyncExitStack() as open_clients:
                for client in clients:
                    await open_clients.enter_async_context(client)
                clock.advance(timedelta(hours=1))
                await Scheduler(store, turns, clock=clock).fire_due()
                yield fakes


class TestAProfilesModel:
    async def test_runs_the_schedule_with_the_profiles_prompt_first(self, tmp_path: Path) -> None:
        async with writer_fired(tmp_path, ["fast"]) as (default, fast):
            assert default.requests == []
            (request,) = fast.requests
            system = request.body["messages"][0]
            assert system == {"role": "system", "content": f"You write briefly.\n\n{SYSTEM_PROMPT}"}

    async def test_a_model_the_host_did_not_give_fails_the_run(self, tmp_path: Path) -> None:
        async with writer_fired(tmp_path, ["slow"]) as (default, slow):
            assert default.requests == slow.requests == []
        with EmbeddedScheduleStore(tmp_path / "state.db", url="sqlite:state.db") as store:
            book = ScheduleBook(store, clock=ManualClock(START))
            (schedule,) = book.search("ada").schedules
            (run,) = book.runs("ada", schedule.schedule_id)
        assert run.status is RunStatus.FAILED
        assert "agent 'writer' runs on model 'fast', which the host did not provide" in run.summary
