"""Faults stay with one schedule: a schedule the host cannot compute is paused with its
reason and its owner told, a store that fails at any step of a pass costs at most a
retry, claimed runs always run, and the count of runs in flight stays exact.

The store faults are injected at a seam, :class:`Faulty`: a wrapper of the real store
that raises at the Nth call of one method; everything else is the real SQLite (or libSQL)
store. Time is a :class:`ManualClock`; waits poll the store or the service, never sleep
for luck.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import anyio
import apsw
import pytest
from toolcage.host_bindings import ChannelMessage, StoreError
from toolcage.host_bindings._scheduler import (
    Claim,
    ManualClock,
    RunStatus,
    ScheduleBook,
    Scheduler,
    SchedulerSettings,
    ScheduleStatus,
    ScheduleStore,
    TurnOutcome,
    TurnRequest,
    open_schedule_store,
)
from toolcage.host_bindings._scheduler._tables import LEASE_EXPIRED
from toolcage.policies import Principal

from ..store.libsql_server import LibsqlServer
from .conftest import START

pytestmark = pytest.mark.anyio

TOKEN = "test-token"  # noqa: S105 -- the test server's own token
HOUR = timedelta(hours=1)
SETTINGS = SchedulerSettings(
    lease=timedelta(minutes=30), poll=timedelta(minutes=1), max_concurrent_runs=2
)


class Faulty:
    """The store, except that ``fail(method, at=N)`` makes its Nth call raise (``after``:
    once the real call has done its work, as when an answer is lost on its way back)."""

    def __init__(self, store: ScheduleStore) -> None:
        self.store = store
        self.calls: Counter[str] = Counter()
        self.faults: dict[tuple[str, int], tuple[Exception, bool]] = {}

    def fail(self, method: str, at: int = 1, *, after: bool = False, error: Any = None) -> None:
        problem = error or StoreError(f"injected: {method} call {at} failed")
        self.faults[(method, at)] = (problem, after)

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.store, name)
        if not callable(real):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            fault = self.faults.pop((name, self.calls[name]), None)
            if fault is not None and not fault[1]:
                raise fault[0]
            result = real(*args, **kwargs)
            if fault is not None:
                raise fault[0]
            return result

        return call

    def as_store(self) -> ScheduleStore:
        return cast(ScheduleStore, self)


class Outbox:
    def __init__(self) -> None:
        self.messages: list[ChannelMessage] = []

    async def send(self, message: ChannelMessage) -> None:
        self.messages.append(message)

    def about(self, schedule_id: str) -> list[ChannelMessage]:
        return [m for m in self.messages if m.data["schedule_id"] == schedule_id]


async def answer(request: TurnRequest) -> TurnOutcome:
    return TurnOutcome(output=f"done: {request.schedule.goal}")


async def until(condition: Callable[[], bool]) -> None:
    """Poll until ``condition`` holds (the test's own timeout bounds it)."""
    while not condition():  # noqa: ASYNC110 (the store and worker threads, not events)
        await anyio.sleep(0.005)


def settled(service: Scheduler, clock: ManualClock, sleepers: int) -> bool:
    """No run in flight, and the service's ``sleepers`` tasks wait on the clock (the poll
    loop, lease keepers): time can move on."""
    return service.in_flight == 0 and clock.waiting == sleepers


def hourly(book: ScheduleBook, user: str, goal: str, **fields: Any) -> str:
    return book.create(
        Principal(user, channel_id=f"chat-{user}"),
        goal=goal,
        cadence_type="cron",
        cadence_value="0 * * * *",
        **fields,
    ).schedule_id


def set_zone(db: Path, schedule_id: str, zone: str) -> None:
    """Write a zone straight into the row, as an edit by hand (or another tzdata) would."""
    conn = apsw.Connection(str(db))
    try:
        conn.execute("UPDATE schedules SET timezone = ? WHERE schedule_id = ?", (zone, schedule_id))
    finally:
        conn.close()


@pytest.fixture(params=["embedded", "remote"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[ScheduleStore, Path]]:
    """A real store on either backend, and the database file behind it."""
    server = None
    if request.param == "remote":
        server = LibsqlServer(tmp_path / "remote.db", token=TOKEN)
        url, db = server.url, tmp_path / "remote.db"
    else:
        url, db = "sqlite:state/state.db", tmp_path / "state" / "state.db"
    opened = open_schedule_store(url, base_dir=tmp_path, auth_token=TOKEN)
    try:
        yield opened, db
    finally:
        opened.close()
        if server is not None:
            server.close()


class TestAScheduleTheHostCannotCompute:
    async def test_is_paused_with_its_reason_and_the_service_goes_on(
        self, backend: tuple[ScheduleStore, Path], clock: ManualClock
    ) -> None:
        store, db = backend
        book = ScheduleBook(store, clock=clock)
        bad = hourly(book, "ada", "Check the feed", notification="conditional")
        good = [hourly(book, "bob", "Water the plants"), hourly(book, "ada", "Read mail")]
        set_zone(db, bad, "Mars/Olympus")
        outbox = Outbox()
        settings = SchedulerSettings(lease=SETTINGS.lease, poll=SETTINGS.poll)  # 4 at once
        service = Scheduler(store, answer, channel=outbox, clock=clock, settings=settings)
        async with anyio.create_task_group() as group:
            group.start_soon(service.run)
            clock.advance(HOUR)
            await until(lambda: settled(service, clock, 1))
            assert book.runs("bob", good[0])[0].status is RunStatus.SUCCEEDED
            assert book.runs("ada", good[1])[0].status is RunStatus.SUCCEEDED
            schedule = book.get("ada", bad)
            assert schedule.status is ScheduleStatus.PAUSED
            (failed,) = book.runs("ada", bad)
            assert failed.status is RunStatus.FAILED
            assert failed.occurrence_at == START + HOUR
            assert "time zone 'Mars/Olympus' cannot be loaded" in failed.summary
            assert "paused" in failed.summary
            (told,) = outbox.about(bad)
            assert (told.user_id, told.channel_id, told.text) == ("ada", "chat-ada", failed.summary)
            assert told.data["status"] == "failed"

            clock.advance(HOUR)  # the others go on; the paused one is quiet
            await until(lambda: settled(service, clock, 1))
            assert len(book.runs("ada", good[1])) == 2
            assert len(book.runs("ada", bad)) == 1
            assert len(outbox.about(bad)) == 1

            with pytest.raises(ValueError, match="timezone"):  # resuming asks for a zone
                book.edit("ada", bad, {"status": "active"})
            book.edit("ada", bad, {"status": "active", "timezone": "Europe/Paris"})
            clock.advance(HOUR)
            await until(lambda: settled(service, clock, 1))
            assert len(book.runs("ada", bad)) == 2
            assert book.runs("ada", bad)[0].status is RunStatus.SUCCEEDED
            group.cancel_scope.cancel()


def set_column(
    store: ScheduleStore, db: Path, schedule_id: str, column: str, value: object
) -> None:
    """Write a value this toolcage does not know straight into the row: in the file, or
    through the libSQL server's own connection (which alone sees its latest writes)."""
    sql = f"UPDATE schedules SET {column} = ? WHERE schedule_id = ?"  # noqa: S608 -- the test's own column names
    execute = getattr(store, "_execute", None)
    if execute is not None:
        execute(sql, (value, schedule_id))
        return
    conn = apsw.Connection(str(db))
    try:
        conn.execute(sql, (value, schedule_id))
    finally:
        conn.close()


class TestARowTheHostCannotRead:
    @pytest.mark.parametrize(
        ("column", "value"),
        [("cadence_type", "fortnightly"), ("notification", "shout"), ("created_us", "yesterday")],
    )
    async def test_is_paused_with_its_reason_and_the_others_fire(
        self, backend: tuple[ScheduleStore, Path], clock: ManualClock, column: str, value: str
    ) -> None:
        store, db = backend
        book = ScheduleBook(store, clock=clock)
        bad = hourly(book, "ada", "Check the feed")
        good = [hourly(book, "bob", "Water the plants"), hourly(book, "ada", "Read mail")]
        kept = {"cadence_type": "cron", "notification": "conditional", "created_us": 0}[column]
        set_column(store, db, bad, column, value)
        service = Scheduler(store, answer, channel=Outbox(), clock=clock, settings=SETTINGS)
        async with anyio.create_task_group() as group:
            group.start_soon(service.run)
            for _ in range(2):
                clock.advance(HOUR)
                await until(lambda: settled(service, clock, 1))
            assert len(book.runs("bob", good[0])) == 2
            assert len(book.runs("ada", good[1])) == 2
            group.cancel_scope.cancel()
        set_column(store, db, bad, column, kept)  # mended by hand: it reads again, paused
        assert book.get("ada", bad).status is ScheduleStatus.PAUSED
        (failed,) = book.runs("ada", bad)
        assert failed.status is RunStatus.FAILED
        assert "its stored row cannot be read" in failed.summary
        assert "paused" in failed.summary


class TestStoreFaultsAtEachStep:
    """One transient store failure at any step: every healthy occurrence still runs exactly
    once and is recorded, nothing stays ``running``, and no run slot is lost."""

    @pytest.mark.parametrize(
        ("method", "at", "after"),
        [
            ("expire_leases", 1, False),
            ("due_schedules", 1, False),
            ("claim", 1, False),
            ("claim", 2, False),  # after one claim of the pass was taken
            ("claim", 2, True),  # taken, but the answer was lost
            ("record_fault", 1, False),
            ("finish_run", 1, False),
            ("finish_run", 2, True),
            ("get_run", 1, False),
            ("schedule_of_run", 1, False),
        ],
    )
    async def test_one_failure(
        self,
        store: ScheduleStore,
        db_path: Path,
        book: ScheduleBook,
        clock: ManualClock,
        method: str,
        at: int,
        after: bool,
    ) -> None:
        healthy = [hourly(book, user, f"task {n}") for n, user in enumerate(["ada", "bob", "ada"])]
        bad = hourly(book, "bob", "Broken")
        set_zone(db_path, bad, "Nowhere/Atlantis")
        dead = dead_run(book, store)  # a run whose scheduler died: its lease ends at 12:30
        faulty = Faulty(store)
        faulty.fail(method, at, after=after)
        outbox = Outbox()
        service = Scheduler(
            faulty.as_store(), answer, channel=outbox, clock=clock, settings=SETTINGS
        )
        clock.advance(HOUR)
        for _ in range(5):  # a few passes, a minute apart
            await fire(service, clock)
            clock.advance(timedelta(minutes=1))
        assert (method, at) not in faulty.faults  # the fault was met
        assert service.in_flight == 0
        for n, schedule_id in enumerate(healthy):
            (run,) = book.runs(["ada", "bob", "ada"][n], schedule_id)
            assert (run.status, run.occurrence_at) == (RunStatus.SUCCEEDED, START + HOUR)
        assert book.get("bob", bad).status is ScheduleStatus.PAUSED
        assert book.runs("bob", bad)[0].status is RunStatus.FAILED
        assert store.get_run(dead) is not None
        assert store.get_run(dead).status is RunStatus.FAILED  # type: ignore[union-attr]
        assert store.expire_leases(clock.now() + SETTINGS.lease) == []  # nothing stranded
        if method not in ("get_run", "schedule_of_run"):  # those lose one notification
            assert len(outbox.messages) == len(healthy) + 2


def dead_run(book: ScheduleBook, store: ScheduleStore) -> str:
    """A run of a new schedule claimed by a scheduler that died: its lease ends at 12:30."""
    schedule = book.get("ada", hourly(book, "ada", "Orphaned"))
    assert schedule.next_run_at is not None
    claim = Claim(
        schedule_id=schedule.schedule_id,
        seen_next_run_at=schedule.next_run_at,
        occurrence_at=schedule.next_run_at,
        next_run_at=schedule.next_run_at + HOUR,
        next_status=ScheduleStatus.ACTIVE,
        run_id="run-dead",
        owner="dead",
        started_at=START,
        lease_until=START + timedelta(minutes=30),
    )
    assert store.claim(claim)
    return claim.run_id


async def fire(service: Scheduler, clock: ManualClock) -> list[str]:
    """``fire_due``, moving the clock on a second at a time while it waits (a run whose
    record is tried again waits ``poll`` on the clock)."""
    fired: list[str] = []
    async with anyio.create_task_group() as group:

        async def go() -> None:
            fired.extend(await service.fire_due())
            group.cancel_scope.cancel()

        group.start_soon(go)
        while True:
            await anyio.sleep(0.01)
            clock.advance(timedelta(seconds=1))
    return fired


class Gate:
    """Turns that wait until the test opens the gate; counts those inside."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.release = anyio.Event()

    async def __call__(self, request: TurnRequest) -> TurnOutcome:
        self.inside += 1
        self.most = max(self.most, self.inside)
        try:
            await self.release.wait()
        finally:
            self.inside -= 1
        return TurnOutcome(output="ok")


class TestRunsInFlight:
    async def test_a_failed_claim_strands_no_run_and_loses_no_slot(
        self, store: ScheduleStore, book: ScheduleBook, clock: ManualClock
    ) -> None:
        first, second = hourly(book, "ada", "one"), hourly(book, "bob", "two")
        faulty = Faulty(store)
        faulty.fail("claim", 2)  # the second claim of the first pass
        faulty.fail("claim", 4, error=StoreError("injected again"))
        gate = Gate()
        service = Scheduler(faulty.as_store(), gate, clock=clock, settings=SETTINGS)
        async with anyio.create_task_group() as group:
            group.start_soon(service.run)
            clock.advance(HOUR)
            # The first runs; the second waits a pass (the loop and a lease keeper sleep).
            await until(lambda: gate.inside == 1 and clock.waiting == 2)
            assert service.in_flight == 1
            clock.advance(timedelta(minutes=1))
            await until(lambda: gate.inside == 2)  # both at once: no slot was lost
            assert service.in_flight == 2
            gate.release.set()
            await until(lambda: service.in_flight == 0)
            group.cancel_scope.cancel()
        assert book.runs("ada", first)[0].status is RunStatus.SUCCEEDED
        assert book.runs("bob", second)[0].status is RunStatus.SUCCEEDED

    async def test_a_failed_renewal_is_tried_again(
        self, store: ScheduleStore, book: ScheduleBook, clock: ManualClock
    ) -> None:
        schedule_id = hourly(book, "ada", "slow")
        faulty = Faulty(store)
        faulty.fail("renew", 1)
        gate = Gate()
        service = Scheduler(faulty.as_store(), gate, clock=clock, settings=SETTINGS)
        clock.advance(HOUR)
        async with anyio.create_task_group() as group:
            group.start_soon(service.fire_due)
            # The lease keeper asleep on the clock too: time moved before it sleeps would
            # move its first renewal ten minutes further, past what the loop waits for.
            await until(lambda: gate.inside == 1 and clock.waiting == 1)
            for renewals in range(1, 7):  # two leases, a renewal every ten minutes
                clock.advance(timedelta(minutes=10))
                await until(lambda: faulty.calls["renew"] >= renewals and clock.waiting == 1)  # noqa: B023
            assert store.expire_leases(clock.now()) == []  # the first renewal failed
            gate.release.set()
        run = book.runs("ada", schedule_id)[0]
        assert (run.status, run.summary) == (RunStatus.SUCCEEDED, "ok")
        assert run.summary != LEASE_EXPIRED


class TestFireDue:
    async def test_fires_every_due_occurrence_at_most_max_concurrent_runs_at_once(
        self, store: ScheduleStore, book: ScheduleBook, clock: ManualClock
    ) -> None:
        ids = [hourly(book, "ada", f"task {n}") for n in range(5)]
        inside, most, started = 0, 0, 0

        async def busy(request: TurnRequest) -> TurnOutcome:
            """Stays until a second run is inside too (or no other is left to start)."""
            nonlocal inside, most, started
            inside, started = inside + 1, started + 1
            most = max(most, inside)
            await until(lambda: inside >= 2 or started == len(ids))
            inside -= 1
            return TurnOutcome(output="ok")

        clock.advance(HOUR)
        service = Scheduler(store, busy, clock=clock, settings=SETTINGS)
        assert len(await service.fire_due()) == 5
        assert most == SETTINGS.max_concurrent_runs
        assert all(book.runs("ada", s)[0].status is RunStatus.SUCCEEDED for s in ids)
        assert service.in_flight == 0
