"""The time budget: a class it cuts short is reported as not run, never as held."""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import pytest
from toolcage.runtime.cli._selftest import exit_status
from toolcage.runtime.selftest import run_selftest


class TestCutShort:
    def test_a_class_started_but_cut_short_is_not_run(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The clock reads 0 when the run starts and when ``paths`` checks it may begin,
        then 100: every check inside the class finds the budget spent."""
        monkeypatch.chdir(tmp_path)
        ticks = itertools.chain([0.0, 0.0], itertools.repeat(100.0))

        def clock() -> float:
            return next(ticks)

        done = anyio.run(lambda: run_selftest(None, only=("paths",), budget=5, clock=clock))
        assert done.not_run == ["paths: cut short by the time budget (--budget 5 s)"]
        assert {f.payload for f in done.findings} == {"host data inside a mount"}
        assert (done.held, done.passed, exit_status(done)) == (True, False, 3)
