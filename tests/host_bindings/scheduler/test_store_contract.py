"""The schedule store's contract, on both backends: an embedded SQLite file and a libSQL
server on 127.0.0.1."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from toolcage.host_bindings._scheduler import (
    Claim,
    Fault,
    ManualClock,
    RunStatus,
    ScheduleBook,
    Scheduler,
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

TOKEN = "test-token"  # noqa: S105 -- the test server's own token


@pytest.fixture(params=["embedded", "remote"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ScheduleStore]:
    server = (
        LibsqlServer(tmp_path / "remote.db", token=TOKEN) if request.param == "remote" else None
    )
    url = "sqlite:state/state.db" if server is None else server.url
    opened = open_schedule_store(url, base_dir=tmp_path, auth_token=TOKEN)
    try:
        yield opened
    finally:
        opened.close()
        if server is not None:
            server.close()


@pytest.fixture
def any_book(any_store: ScheduleStore, clock: ManualClock) -> ScheduleBook:
    return ScheduleBook(any_store, clock=clock)


def hourly(book: ScheduleBook, user: str = "ada") -> str:
    return book.create(
        Principal(user), goal="Check the feed", cadence_type="cron", cadence_value="0 * * * *"
    ).schedule_id


def claim_of(book: ScheduleBook, schedule_id: str, owner: str = "a") -> Claim:
    schedule = book.get("ada", schedule_id)
    assert schedule.next_run_at is not None
    now = schedule.next_run_at
    return Claim(
        schedule_id=schedule_id,
        seen_next_run_at=now,
        occurrence_at=now,
        next_run_at=now + timedelta(hours=1),
        next_status=ScheduleStatus.ACTIVE,
        run_id=f"run-{uuid.uuid4()}",
        owner=owner,
        started_at=now,
        lease_until=now + timedelta(minutes=5),
    )


class TestOwners:
    def test_create_search_edit_delete(self, any_book: ScheduleBook) -> None:
        schedule_id = hourly(any_book)
        hourly(any_book, "bob")
        page = any_book.search("ada", name="feed")
        assert [s.schedule_id for s in page.schedules] == [schedule_id]
        assert (page.total, page.remaining) == (1, 0)
        assert any_book.edit("ada", schedule_id, {"status": "paused"}).status == "paused"
        assert any_book.search("ada", status="paused").total == 1
        with pytest.raises(LookupError):
            any_book.get("bob", schedule_id)
        any_book.delete("ada", schedule_id)
        with pytest.raises(LookupError):
            any_book.get("ada", schedule_id)
        assert any_book.search("bob").total == 1


class TestClaims:
    def test_of_two_claims_of_one_occurrence_one_wins(
        self, any_book: ScheduleBook, any_store: ScheduleStore
    ) -> None:
        schedule_id = hourly(any_book)
        first, second = claim_of(any_book, schedule_id, "a"), claim_of(any_book, schedule_id, "b")
        assert any_store.claim(first) is True
        assert any_store.claim(second) is False
        assert any_store.due_schedules(START + timedelta(days=1), 10) == []  # in flight
        assert any_store.finish_run(
            first.run_id,
            "a",
            status=RunStatus.SUCCEEDED,
            ended_at=first.started_at,
            summary="ok",
            cost=0.5,
            output="x" * 300,
        )
        assert not any_store.finish_run(
            first.run_id,
            "a",
            status=RunStatus.FAILED,
            ended_at=first.started_at,
            summary="again",
            cost=0,
            output="",
        )
        (run,) = any_book.runs("ada", schedule_id)
        assert (run.status, run.cost, run.output_chars) == (RunStatus.SUCCEEDED, 0.5, 300)
        chunk = any_book.run_output("ada", run.run_id, offset=250, max_chars=200)
        assert (len(chunk.text), chunk.remaining) == (50, 0)

    def test_an_occurrence_that_ran_already_is_moved_past(
        self, any_book: ScheduleBook, any_store: ScheduleStore
    ) -> None:
        schedule_id = hourly(any_book)
        done = claim_of(any_book, schedule_id)
        assert any_store.claim(done)
        any_store.finish_run(
            done.run_id,
            "a",
            status=RunStatus.SUCCEEDED,
            ended_at=done.started_at,
            summary="",
            cost=0,
            output="",
        )
        any_store.update_schedule("ada", schedule_id, {"next_run_at": done.occurrence_at})
        assert any_store.claim(claim_of(any_book, schedule_id)) is False
        schedule = any_book.get("ada", schedule_id)
        assert schedule.next_run_at == done.occurrence_at + timedelta(hours=1)
        assert len(any_store.due_schedules(done.occurrence_at + timedelta(hours=1), 10)) == 1

    def test_leases_renew_and_expire(
        self, any_book: ScheduleBook, any_store: ScheduleStore
    ) -> None:
        schedule_id = hourly(any_book)
        claim = claim_of(any_book, schedule_id)
        assert any_store.claim(claim)
        assert any_store.renew(claim.run_id, "a", claim.started_at + timedelta(minutes=10))
        assert not any_store.renew(claim.run_id, "someone else", claim.started_at)
        assert any_store.expire_leases(claim.started_at + timedelta(minutes=9)) == []
        later = claim.started_at + timedelta(minutes=11)
        assert any_store.expire_leases(later) == [claim.run_id]
        run = any_store.get_run(claim.run_id)
        assert run is not None
        assert (run.status, run.summary, run.ended_at) == (RunStatus.FAILED, LEASE_EXPIRED, later)
        assert not any_store.renew(claim.run_id, "a", later)
        owner = any_store.schedule_of_run(claim.run_id)
        assert owner is not None
        assert (owner.schedule_id, owner.user_id) == (schedule_id, "ada")
        assert any_store.schedule_of_run("run-unknown") is None
        assert len(any_store.due_schedules(later + timedelta(hours=1), 10)) == 1


class TestFaults:
    def test_a_fault_pauses_once_and_records_the_occurrence_failed(
        self, any_book: ScheduleBook, any_store: ScheduleStore
    ) -> None:
        schedule_id = hourly(any_book)
        seen = any_book.get("ada", schedule_id).next_run_at
        assert seen is not None

        def fault(run_id: str) -> Fault:
            return Fault(schedule_id, seen, run_id, "a", seen, "its zone is unknown")

        assert any_store.record_fault(fault("run-1")) is True
        assert any_store.record_fault(fault("run-2")) is False  # paused already
        schedule = any_book.get("ada", schedule_id)
        assert (schedule.status, schedule.next_run_at) == (ScheduleStatus.PAUSED, seen)
        (run,) = any_book.runs("ada", schedule_id)
        assert (run.run_id, run.status, run.occurrence_at) == ("run-1", RunStatus.FAILED, seen)
        assert (run.summary, run.started_at, run.ended_at) == ("its zone is unknown", seen, seen)
        assert any_store.due_schedules(seen + timedelta(days=1), 10) == []

    def test_a_schedule_that_moved_or_runs_is_left_alone(
        self, any_book: ScheduleBook, any_store: ScheduleStore
    ) -> None:
        schedule_id = hourly(any_book)
        claim = claim_of(any_book, schedule_id)
        assert any_store.claim(claim)
        stale = Fault(schedule_id, claim.seen_next_run_at, "run-x", "a", START, "late")
        assert any_store.record_fault(stale) is False
        assert any_book.get("ada", schedule_id).status is ScheduleStatus.ACTIVE
        assert [r.run_id for r in any_book.runs("ada", schedule_id)] == [claim.run_id]


class TestService:
    @pytest.mark.anyio
    async def test_fires_on_either_backend(
        self, any_book: ScheduleBook, any_store: ScheduleStore, clock: ManualClock
    ) -> None:
        async def answer(request: TurnRequest) -> TurnOutcome:
            return TurnOutcome(output="done")

        schedule_id = hourly(any_book)
        clock.advance(timedelta(hours=3, minutes=5))
        assert len(await Scheduler(any_store, answer, clock=clock).fire_due()) == 1
        (run,) = any_book.runs("ada", schedule_id)
        assert (run.status, run.skipped) == (RunStatus.SUCCEEDED, 2)
