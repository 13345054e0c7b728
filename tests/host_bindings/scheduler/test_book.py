"""``ScheduleBook``: what the scheduler tools call -- validation, paging, ownership, edits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from toolcage.host_bindings._scheduler import (
    ManualClock,
    ScheduleBook,
    ScheduleNotFound,
    ScheduleValidationError,
)
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore
from toolcage.policies import Principal

from .conftest import START


def create(book: ScheduleBook, user: str = "ada", **fields: object) -> str:
    arguments: dict[str, Any] = {
        "goal": "Summarise my inbox",
        "cadence_type": "cron",
        "cadence_value": "0 9 * * 1-5",
        "timezone": "Europe/Paris",
        **fields,
    }
    return book.create(Principal(user, channel_id="chat-7"), **arguments).schedule_id


class TestCreate:
    def test_returns_the_next_run_and_keeps_the_channel(self, book: ScheduleBook) -> None:
        schedule = book.get("ada", create(book))
        data = schedule.to_json()
        assert data["status"] == "active"
        assert data["next_run_at"] == "2026-03-23T08:00:00Z"  # Monday 09:00 CET
        assert data["channel_id"] == "chat-7"
        assert data["notification"] == "always"
        assert data["name"] == "Summarise my inbox"

    @pytest.mark.parametrize(
        ("fields", "field"),
        [
            ({"goal": "  "}, "goal"),
            ({"cadence_type": "weekly"}, "cadence_type"),
            ({"notification": "sometimes"}, "notification"),
            ({"timezone": "Europe/Atlantis"}, "timezone"),
            ({"cadence_value": "every day"}, "cadence_value"),
            ({"name": 42}, "name"),
        ],
    )
    def test_refuses_with_the_field(
        self, book: ScheduleBook, fields: dict[str, Any], field: str
    ) -> None:
        with pytest.raises(ScheduleValidationError) as caught:
            create(book, **fields)
        assert caught.value.field == field

    def test_min_interval_is_the_operators(
        self, store: EmbeddedScheduleStore, clock: ManualClock
    ) -> None:
        strict = ScheduleBook(store, clock=clock, min_interval_secs=3600)
        with pytest.raises(ScheduleValidationError, match="minimum interval is 3600 s"):
            create(strict, cadence_value="*/30 * * * *")
        create(strict, cadence_value="0 * * * *")


class TestOwnership:
    def test_another_users_schedule_is_missing(self, book: ScheduleBook) -> None:
        schedule_id = create(book, "ada")
        for attempt in (
            lambda: book.get("bob", schedule_id),
            lambda: book.edit("bob", schedule_id, {"status": "paused"}),
            lambda: book.delete("bob", schedule_id),
            lambda: book.runs("bob", schedule_id),
        ):
            with pytest.raises(ScheduleNotFound) as other:
                attempt()
            with pytest.raises(ScheduleNotFound) as missing:
                book.get("bob", "sched-nope")
            assert other.value.error_type == missing.value.error_type == "not_found"
        assert book.search("bob").total == 0
        assert book.get("ada", schedule_id).status == "active"


class TestSearch:
    def test_pages_with_total_remaining_and_hint(
        self, book: ScheduleBook, clock: ManualClock
    ) -> None:
        for index in range(7):
            create(book, name=f"report {index}")
            clock.advance(timedelta(seconds=1))
        first = book.search("ada", limit=3)
        assert (first.total, first.remaining, len(first.schedules)) == (7, 4, 3)
        assert "offset=3" in first.hint
        assert [s.name for s in first.schedules] == ["report 6", "report 5", "report 4"]
        last = book.search("ada", limit=3, offset=6)
        assert (last.remaining, last.hint) == (0, "this is the last page")

    def test_filters(self, book: ScheduleBook) -> None:
        create(book, name="Inbox digest")
        paused = create(book, name="Weekly report", notification="never")
        create(book, name="ping", cadence_type="interval", cadence_value="1h")
        book.edit("ada", paused, {"status": "paused"})
        assert [s.name for s in book.search("ada", name="INBOX").schedules] == ["Inbox digest"]
        assert [s.name for s in book.search("ada", status="paused").schedules] == ["Weekly report"]
        assert [s.name for s in book.search("ada", cadence_type="interval").schedules] == ["ping"]
        assert book.search("ada", notification="never").total == 1
        assert "no schedules match" in book.search("ada", name="zzz").hint

    @pytest.mark.parametrize(
        ("arguments", "field"),
        [
            ({"limit": 51}, "limit"),
            ({"limit": 0}, "limit"),
            ({"offset": -1}, "offset"),
            ({"limit": "5"}, "limit"),
            ({"status": "done"}, "status"),
        ],
    )
    def test_bounds(self, book: ScheduleBook, arguments: dict[str, Any], field: str) -> None:
        with pytest.raises(ScheduleValidationError) as caught:
            book.search("ada", **arguments)
        assert caught.value.field == field


class TestEdit:
    def test_partial_patch_keeps_the_rest(self, book: ScheduleBook) -> None:
        schedule_id = create(book)
        edited = book.edit("ada", schedule_id, {"goal": "Summarise my inbox and calendar"})
        assert edited.goal == "Summarise my inbox and calendar"
        assert edited.cadence_value == "0 9 * * 1-5"
        assert edited.next_run_at == datetime(2026, 3, 23, 8, tzinfo=UTC)

    def test_new_cadence_recomputes_the_next_run(self, book: ScheduleBook) -> None:
        schedule_id = create(book)
        edited = book.edit("ada", schedule_id, {"cadence_type": "interval", "cadence_value": "2h"})
        assert edited.next_run_at == START + timedelta(hours=2)
        moved = book.edit("ada", schedule_id, {"timezone": "America/New_York"})
        assert moved.next_run_at == START + timedelta(hours=2)  # intervals ignore the zone

    def test_cadence_type_needs_its_value(self, book: ScheduleBook) -> None:
        with pytest.raises(ScheduleValidationError, match="cadence_value"):
            book.edit("ada", create(book), {"cadence_type": "once"})

    def test_pause_and_resume(self, book: ScheduleBook, clock: ManualClock) -> None:
        schedule_id = create(book, cadence_type="interval", cadence_value="1h")
        assert book.edit("ada", schedule_id, {"status": "paused"}).status == "paused"
        clock.advance(timedelta(hours=5))
        resumed = book.edit("ada", schedule_id, {"status": "active"})
        assert resumed.status == "active"
        assert resumed.next_run_at == clock.now() + timedelta(hours=1)

    @pytest.mark.parametrize(
        ("patch", "field"),
        [({"user_id": "bob"}, "user_id"), ({}, None), ({"status": "completed"}, "status")],
    )
    def test_refusals(
        self, book: ScheduleBook, patch: dict[str, object], field: str | None
    ) -> None:
        with pytest.raises(ScheduleValidationError) as caught:
            book.edit("ada", create(book), patch)
        assert caught.value.field == field


class TestDelete:
    def test_delete_then_missing(self, book: ScheduleBook) -> None:
        schedule_id = create(book)
        book.delete("ada", schedule_id)
        with pytest.raises(ScheduleNotFound):
            book.delete("ada", schedule_id)
        with pytest.raises(ScheduleNotFound):
            book.runs("ada", schedule_id)


class TestRunsAndOutput:
    def test_bounds(self, book: ScheduleBook) -> None:
        schedule_id = create(book)
        assert book.runs("ada", schedule_id) == []
        with pytest.raises(ScheduleValidationError, match="between 1 and 20"):
            book.runs("ada", schedule_id, limit=21)
        with pytest.raises(ScheduleValidationError, match="between 200 and 8000"):
            book.run_output("ada", "run-x", max_chars=100)
        with pytest.raises(ScheduleNotFound):
            book.run_output("ada", "run-x")
