"""The store package's façade: ``__all__`` is sorted, complete, and names its home."""

from __future__ import annotations

import toolcage.host_bindings._store as store


class TestExports:
    def test_all_is_sorted(self) -> None:
        assert store.__all__ == sorted(store.__all__)

    def test_all_names_exist_and_report_a_public_home(self) -> None:
        # this package, or toolcage.host_bindings for the names it re-exports
        homes = {"toolcage.host_bindings._store", "toolcage.host_bindings"}
        for name in store.__all__:
            assert getattr(store, name).__module__ in homes, name
