"""The rate-limit counters of both store backends (see ``_counters``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest
from toolcage.host_bindings._store import StateStore, open_store
from toolcage.host_bindings._store._counters import (
    RETURN_BYTES,
    RETURN_CALL,
    TAKE_BYTES,
    TAKE_CALL,
    Counters,
    Take,
    WouldWait,
)

from .conftest import TOKEN
from .libsql_server import LibsqlServer


def counters_of(store: StateStore) -> Counters:
    found: Counters = getattr(store, "counters")  # noqa: B009 -- not part of StateStore
    return found


def take_call(counters: Counters, key: str, now: float, size: int = 2, refill: float = 0.5) -> Take:
    [take] = counters.apply([(TAKE_CALL, (key, refill, size, now))]).takes
    assert take is not None
    return take


def take_bytes(
    counters: Counters, key: str, amount: int, now: float, quota: int = 100, window: float = 60
) -> Take:
    [take] = counters.apply([(TAKE_BYTES, (key, quota, window, amount, now))]).takes
    assert take is not None
    return take


class TestBucket:
    def test_spends_then_refuses_then_refills(self, store: StateStore) -> None:
        counters = counters_of(store)
        assert take_call(counters, "k", 100.0).granted == 1
        assert take_call(counters, "k", 100.0).granted == 1
        refused = take_call(counters, "k", 100.5)
        assert (refused.granted, refused.level) == (0, 0.25)
        assert take_call(counters, "k", 102.0).granted == 1
        assert take_call(counters, "k", 102.0).granted == 0

    def test_a_clock_behind_the_stamp_refills_nothing(self, store: StateStore) -> None:
        counters = counters_of(store)
        take_call(counters, "k", 100.0)
        take_call(counters, "k", 100.0)
        assert take_call(counters, "k", 50.0).granted == 0

    def test_a_returned_call_is_spendable_again(self, store: StateStore) -> None:
        counters = counters_of(store)
        take_call(counters, "k", 100.0)
        take_call(counters, "k", 100.0)
        counters.apply([(RETURN_CALL, ("k", 2))])
        assert take_call(counters, "k", 100.0).granted == 1

    def test_keys_are_separate(self, store: StateStore) -> None:
        counters = counters_of(store)
        for _ in range(2):
            take_call(counters, "a", 100.0)
        assert take_call(counters, "b", 100.0).granted == 1


class TestWindow:
    def test_grants_what_is_left_then_nothing_until_the_window_ends(
        self, store: StateStore
    ) -> None:
        counters = counters_of(store)
        assert take_bytes(counters, "w", 70, 10.0).granted == 70
        partial = take_bytes(counters, "w", 70, 20.0)
        assert (partial.granted, partial.level, partial.stamp) == (30, 100, 10.0)
        assert take_bytes(counters, "w", 1, 69.0).granted == 0
        fresh = take_bytes(counters, "w", 5, 70.0)
        assert (fresh.granted, fresh.level, fresh.stamp) == (5, 5, 70.0)

    def test_unused_bytes_go_back_only_within_their_window(self, store: StateStore) -> None:
        counters = counters_of(store)
        take_bytes(counters, "w", 100, 10.0)
        counters.apply([(RETURN_BYTES, ("w", 10.0, 40))])
        assert take_bytes(counters, "w", 100, 11.0).granted == 40
        counters.apply([(RETURN_BYTES, ("w", 5.0, 40))])  # another window's: ignored
        assert take_bytes(counters, "w", 1, 12.0).granted == 0


class TestTransactions:
    def test_several_statements_are_kept_together(self, store: StateStore) -> None:
        counters = counters_of(store)
        applied = counters.apply([(TAKE_CALL, ("a", 0.5, 1, 1.0)), (TAKE_CALL, ("b", 0.5, 1, 1.0))])
        assert [take.granted for take in applied.takes if take is not None] == [1, 1]
        assert applied.committed


def refuse(takes: Any) -> bool:
    del takes
    return False


class TestEmbedded:
    @pytest.fixture
    def embedded(self, tmp_path: Path) -> Any:
        store = open_store("sqlite:state.db", base_dir=tmp_path)
        yield store
        store.close()

    def test_keep_false_rolls_every_statement_back(self, embedded: StateStore) -> None:
        counters = counters_of(embedded)
        applied = counters.apply(
            [(TAKE_CALL, ("a", 0.5, 1, 1.0)), (TAKE_CALL, ("b", 0.5, 1, 1.0))], keep=refuse
        )
        assert not applied.committed
        assert take_call(counters, "a", 1.0, size=1).granted == 1

    def test_without_waiting_another_writer_is_would_wait(
        self, embedded: StateStore, tmp_path: Path
    ) -> None:
        counters = counters_of(embedded)
        statement = [(TAKE_CALL, ("a", 0.5, 1, 1.0))]
        counters.apply(statement, wait=False)  # opens its own connection
        other = apsw.Connection(str(tmp_path / "state.db"))
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(WouldWait):
                counters.apply(statement, wait=False)
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert counters.apply(statement, wait=False).takes[0] is not None


def test_a_libsql_server_is_never_asked_without_waiting(tmp_path: Path) -> None:
    with LibsqlServer(tmp_path / "remote.db", token=TOKEN) as server:
        store = open_store(server.url, base_dir=tmp_path, auth_token=TOKEN)
        try:
            counters = counters_of(store)
            statement = [(TAKE_CALL, ("a", 0.5, 1, 1.0))]
            requests = server.requests
            with pytest.raises(WouldWait):
                counters.apply(statement, wait=False)
            assert server.requests == requests
            assert counters.apply(statement).takes[0] is not None
        finally:
            store.close()
