"""The scheduler service on a manual clock: firing, downtime, notifications, runs in flight,
leases."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from toolcage.host_bindings import ChannelMessage
from toolcage.host_bindings._scheduler import (
    ManualClock,
    RunStatus,
    ScheduleBook,
    Scheduler,
    SchedulerSettings,
    ScheduleStatus,
    TurnOutcome,
    TurnRequest,
)
from toolcage.host_bindings._scheduler._model import iso
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.host_bindings._scheduler._tables import LEASE_EXPIRED
from toolcage.policies import Principal

from .conftest import START

pytestmark = pytest.mark.anyio

Runner = Callable[[TurnRequest], Awaitable[TurnOutcome]]
LEASE = timedelta(minutes=30)


class Outbox:
    """A channel that keeps what it is sent."""

    def __init__(self) -> None:
        self.messages: list[ChannelMessage] = []

    async def send(self, message: ChannelMessage) -> None:
        self.messages.append(message)


async def answer(request: TurnRequest) -> TurnOutcome:
    return TurnOutcome(output=f"done: {request.schedule.goal}", cost=0.02)


def hourly(book: ScheduleBook, **fields: object) -> str:
    arguments: dict[str, object] = {
        "goal": "Check the feed",
        "cadence_type": "cron",
        "cadence_value": "0 * * * *",
        **fields,
    }
    return book.create(Principal("ada", channel_id="chat-7"), **arguments).schedule_id


def scheduler(
    store: EmbeddedScheduleStore,
    clock: ManualClock,
    runner: Runner = answer,
    outbox: Outbox | None = None,
    **settings: object,
) -> Scheduler:
    return Scheduler(
        store,
        runner,
        channel=outbox,
        clock=clock,
        settings=SchedulerSettings(**settings),  # type: ignore[arg-type]
    )


class TestFiring:
    async def test_due_occurrence_runs_once_and_is_recorded(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        schedule_id = hourly(book)
        service = scheduler(store, clock)
        assert await service.fire_due() == []  # 12:00 just passed; next is 13:00
        clock.advance(timedelta(hours=1))
        fired = await service.fire_due()
        assert len(fired) == 1
        assert await service.fire_due() == []
        (run,) = book.runs("ada", schedule_id)
        assert run.status is RunStatus.SUCCEEDED
        assert run.occurrence_at == START + timedelta(hours=1)
        assert (run.started_at, run.ended_at, run.cost) == (clock.now(), clock.now(), 0.02)
        assert run.summary == "done: Check the feed"
        assert book.get("ada", schedule_id).next_run_at == START + timedelta(hours=2)
        assert book.get("ada", schedule_id).last_run_at == clock.now()

    async def test_output_is_paged_in_characters(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        text = "é" * 450 + "END"

        async def long(request: TurnRequest) -> TurnOutcome:
            return TurnOutcome(output=text, summary="long")

        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, long).fire_due()
        (run,) = book.runs("ada", schedule_id)
        assert run.output_chars == 453
        first = book.run_output("ada", run.run_id, offset=0, max_chars=200)
        assert (first.text, first.remaining, first.total_chars) == ("é" * 200, 253, 453)
        last = book.run_output("ada", run.run_id, offset=400, max_chars=200)
        assert (last.text, last.remaining) == ("é" * 50 + "END", 0)
        with pytest.raises(LookupError):
            book.run_output("bob", run.run_id)

    async def test_output_is_cut_at_the_limit(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        async def flood(request: TurnRequest) -> TurnOutcome:
            return TurnOutcome(output="x" * 5000)

        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, flood, max_output_chars=1000).fire_due()
        (run,) = book.runs("ada", schedule_id)
        assert run.output_chars < 1100
        assert "truncated at 1000" in book.run_output("ada", run.run_id, 1000, 200).text

    async def test_once_fires_and_completes(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        schedule_id = hourly(book, cadence_type="once", cadence_value="2026-03-20T13:30:00+01:00")
        clock.advance(timedelta(days=3))
        await scheduler(store, clock).fire_due()
        schedule = book.get("ada", schedule_id)
        assert (schedule.status, schedule.next_run_at) == (ScheduleStatus.COMPLETED, None)
        clock.advance(timedelta(days=3))
        assert await scheduler(store, clock).fire_due() == []
        assert len(book.runs("ada", schedule_id)) == 1

    async def test_the_turn_gets_the_owner_and_the_goal(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        seen: list[TurnRequest] = []

        async def record(request: TurnRequest) -> TurnOutcome:
            seen.append(request)
            return TurnOutcome(output="ok")

        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, record).fire_due()
        (request,) = seen
        assert (request.schedule.user_id, request.schedule.goal) == ("ada", "Check the feed")
        assert (request.schedule.schedule_id, request.schedule.channel_id) == (
            schedule_id,
            "chat-7",
        )


class TestDowntime:
    async def test_runs_the_latest_once_and_records_the_skipped(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=5, minutes=20))  # 13:00 .. 17:00 were missed
        assert len(await scheduler(store, clock).fire_due()) == 1
        (run,) = book.runs("ada", schedule_id)
        assert run.occurrence_at == START + timedelta(hours=5)
        assert run.skipped == 4
        assert (run.skipped_first, run.skipped_last) == (
            START + timedelta(hours=1),
            START + timedelta(hours=4),
        )
        assert book.get("ada", schedule_id).next_run_at == START + timedelta(hours=6)

    async def test_paused_schedules_do_not_fire(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        schedule_id = hourly(book)
        book.edit("ada", schedule_id, {"status": "paused"})
        clock.advance(timedelta(hours=3))
        assert await scheduler(store, clock).fire_due() == []
        book.edit("ada", schedule_id, {"status": "active"})
        assert await scheduler(store, clock).fire_due() == []  # resumed from now on
        clock.advance(timedelta(hours=1))
        assert len(await scheduler(store, clock).fire_due()) == 1
        assert book.runs("ada", schedule_id)[0].skipped == 0


class TestNotification:
    @pytest.mark.parametrize(
        ("policy", "report", "notified"),
        [
            ("always", False, True),
            ("always", True, True),
            ("conditional", True, True),
            ("conditional", False, False),
            ("never", True, False),
        ],
    )
    async def test_policies(
        self,
        book: ScheduleBook,
        store: EmbeddedScheduleStore,
        clock: ManualClock,
        policy: str,
        report: bool,
        notified: bool,
    ) -> None:
        async def runner(request: TurnRequest) -> TurnOutcome:
            return TurnOutcome(output="3 new posts", report=report)

        outbox = Outbox()
        schedule_id = hourly(book, notification=policy)
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, runner, outbox).fire_due()
        assert len(outbox.messages) == int(notified)
        if notified:
            (message,) = outbox.messages
            assert (message.user_id, message.channel_id, message.text) == (
                "ada",
                "chat-7",
                "3 new posts",
            )
            assert message.data["schedule_id"] == schedule_id
            assert message.data["status"] == "succeeded"

    async def test_a_failed_run_is_recorded_and_notifies_a_conditional_schedule(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        async def broken(request: TurnRequest) -> TurnOutcome:
            raise ConnectionError("the model is unreachable")

        outbox = Outbox()
        schedule_id = hourly(book, notification="conditional")
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, broken, outbox).fire_due()
        (run,) = book.runs("ada", schedule_id)
        assert run.status is RunStatus.FAILED
        assert "ConnectionError: the model is unreachable" in run.summary
        assert outbox.messages[0].data["status"] == "failed"

    async def test_an_outcome_error_fails_the_run_and_keeps_its_output(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        async def over_budget(request: TurnRequest) -> TurnOutcome:
            return TurnOutcome(output="partial work", error="the turn stopped: cost_budget")

        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, over_budget).fire_due()
        (run,) = book.runs("ada", schedule_id)
        assert (run.status, run.summary) == (RunStatus.FAILED, "the turn stopped: cost_budget")
        assert book.run_output("ada", run.run_id).text == "partial work"

    async def test_a_failing_channel_does_not_lose_the_run(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        class Down:
            async def send(self, message: ChannelMessage) -> None:
                raise OSError("channel down")

        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        service = Scheduler(store, answer, channel=Down(), clock=clock)
        await service.fire_due()
        assert book.runs("ada", schedule_id)[0].status is RunStatus.SUCCEEDED


async def pass_time(clock: ManualClock, total: timedelta) -> None:
    """Advance ten minutes at a time (a third of :data:`LEASE`), letting every task react
    (renew its lease) in between."""
    for _ in range(int(total / timedelta(minutes=10))):
        clock.advance(timedelta(minutes=10))
        await anyio.wait_all_tasks_blocked()


class Gate:
    """A turn that waits until the test opens it."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()
        self.cancelled = False

    async def __call__(self, request: TurnRequest) -> TurnOutcome:
        self.entered.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return TurnOutcome(output=f"goal was: {request.schedule.goal}")


class TestInFlight:
    async def test_edit_and_pause_while_running(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        gate = Gate()
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        service = scheduler(store, clock, gate, lease=LEASE)
        async with anyio.create_task_group() as group:
            group.start_soon(service.fire_due)
            await gate.entered.wait()
            book.edit("ada", schedule_id, {"goal": "Check the other feed"})
            book.edit("ada", schedule_id, {"status": "paused"})
            await pass_time(clock, timedelta(hours=1))
            assert await scheduler(store, clock).fire_due() == []  # paused, and running
            gate.release.set()
        (run,) = book.runs("ada", schedule_id)
        assert run.status is RunStatus.SUCCEEDED
        assert book.run_output("ada", run.run_id).text == "goal was: Check the feed"
        assert book.get("ada", schedule_id).status is ScheduleStatus.PAUSED
        book.edit("ada", schedule_id, {"status": "active"})
        clock.advance(timedelta(hours=1))
        await scheduler(store, clock, gate).fire_due()
        latest = book.runs("ada", schedule_id)[0]
        assert book.run_output("ada", latest.run_id).text == "goal was: Check the other feed"

    async def test_a_due_occurrence_waits_for_the_run_in_flight(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        gate = Gate()
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        async with anyio.create_task_group() as group:
            group.start_soon(scheduler(store, clock, gate, lease=LEASE).fire_due)
            await gate.entered.wait()
            await pass_time(clock, timedelta(hours=2, minutes=30))  # 14:00, 15:00 come due
            assert await scheduler(store, clock).fire_due() == []
            gate.release.set()
        assert len(await scheduler(store, clock).fire_due()) == 1
        runs = book.runs("ada", schedule_id)
        assert [r.occurrence_at for r in runs] == [
            START + timedelta(hours=3),
            START + timedelta(hours=1),
        ]
        assert runs[0].skipped == 1

    async def test_delete_while_running(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        gate = Gate()
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        async with anyio.create_task_group() as group:
            group.start_soon(scheduler(store, clock, gate).fire_due)
            await gate.entered.wait()
            book.delete("ada", schedule_id)
            gate.release.set()
        assert book.search("ada").total == 0

    async def test_stopping_the_service_records_the_run_failed(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        gate = Gate()
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        async with anyio.create_task_group() as group:
            group.start_soon(scheduler(store, clock, gate).run)
            await gate.entered.wait()
            group.cancel_scope.cancel()
        assert gate.cancelled
        (run,) = book.runs("ada", schedule_id)
        assert run.status is RunStatus.FAILED
        assert run.summary == "the scheduler stopped before the run ended"


class TestLeases:
    async def test_a_run_renews_its_lease_while_it_runs(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        gate = Gate()
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        async with anyio.create_task_group() as group:
            group.start_soon(scheduler(store, clock, gate, lease=LEASE).fire_due)
            await gate.entered.wait()
            await pass_time(clock, 4 * LEASE)
            assert store.expire_leases(clock.now()) == []
            gate.release.set()
        assert book.runs("ada", schedule_id)[0].status is RunStatus.SUCCEEDED

    async def test_a_run_whose_lease_was_taken_is_stopped(
        self, book: ScheduleBook, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        gate = Gate()
        schedule_id = hourly(book)
        clock.advance(timedelta(hours=1))
        stalled = ManualClock(clock.now())  # a scheduler whose clock stands still
        outbox = Outbox()
        slow = scheduler(store, stalled, gate, outbox, lease=timedelta(minutes=3))
        async with anyio.create_task_group() as group:
            group.start_soon(slow.fire_due)
            await gate.entered.wait()
            clock.advance(timedelta(minutes=4))
            await scheduler(store, clock).fire_due()  # finds the lease expired
            (run,) = book.runs("ada", schedule_id)
            assert (run.status, run.summary) == (RunStatus.FAILED, LEASE_EXPIRED)
            stalled.advance(timedelta(minutes=1))  # its next renewal fails
        assert gate.cancelled
        assert book.runs("ada", schedule_id)[0].summary == LEASE_EXPIRED
        assert outbox.messages == []


class TestDaylightSavingRuns:
    @pytest.mark.parametrize(
        ("zone", "start", "expected"),
        [
            (  # spring forward on 03-29: 02:30 does not exist, runs at 03:00 CEST
                "Europe/Paris",
                datetime(2026, 3, 27, 12, tzinfo=UTC),
                ["2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"],
            ),
            (  # fall back on 10-25: 02:30 happens twice, runs at the first (CEST)
                "Europe/Paris",
                datetime(2026, 10, 23, 12, tzinfo=UTC),
                ["2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"],
            ),
            (  # spring forward on 03-08: runs at 03:00 EDT
                "America/New_York",
                datetime(2026, 3, 6, 12, tzinfo=UTC),
                ["2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"],
            ),
            (  # fall back on 11-01: 02:30 happens once (01:00-02:00 repeats)
                "America/New_York",
                datetime(2026, 10, 30, 12, tzinfo=UTC),
                ["2026-10-31T06:30:00Z", "2026-11-01T07:30:00Z", "2026-11-02T07:30:00Z"],
            ),
        ],
    )
    async def test_a_daily_0230_across_the_change(
        self, store: EmbeddedScheduleStore, zone: str, start: datetime, expected: list[str]
    ) -> None:
        clock = ManualClock(start)
        book = ScheduleBook(store, clock=clock)
        schedule_id = book.create(
            Principal("ada"),
            goal="Back up",
            cadence_type="cron",
            cadence_value="30 2 * * *",
            timezone=zone,
        ).schedule_id
        service = scheduler(store, clock)
        for _ in range(3 * 24 * 4):  # three days, every quarter of an hour
            clock.advance(timedelta(minutes=15))
            await service.fire_due()
        runs = book.runs("ada", schedule_id)
        assert [iso(r.occurrence_at) for r in reversed(runs)] == expected
        assert all(r.skipped == 0 for r in runs)
