"""A schedule store in a temporary SQLite file, a manual clock, and a book over both."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from toolcage.host_bindings._scheduler import ManualClock, ScheduleBook
from toolcage.host_bindings._scheduler._sqlite import EmbeddedScheduleStore

START = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "state.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[EmbeddedScheduleStore]:
    with EmbeddedScheduleStore(db_path, url="sqlite:state/state.db") as opened:
        yield opened


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def book(store: EmbeddedScheduleStore, clock: ManualClock) -> ScheduleBook:
    return ScheduleBook(store, clock=clock, min_interval_secs=60)
