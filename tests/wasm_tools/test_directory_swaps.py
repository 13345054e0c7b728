"""Directories swapped while the file tools write into them: each write lands whole in one
of them or fails clearly, and no temporary file stays behind in either.

A thread renames two directories back and forth (through a third name, so each is missing
for a moment too) while ``file_write`` calls run through ``Runtime.from_config`` and
``execute``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .conftest import Sandbox, sandbox_at
from .test_atomic_writes import leftovers

pytestmark = pytest.mark.anyio

CALLS = 300
SWAPPED = (
    "its directory was moved, removed or replaced while the tool ran",
    "does not exist",  # the moment a directory is under neither name
)


class Swapper:
    """Renames ``a`` and ``b`` into each other's name until stopped; counts the swaps."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.swaps = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="swapper")

    def _run(self) -> None:
        a, b, aside = self.root / "a", self.root / "b", self.root / "aside"
        while not self.stop.is_set():
            os.rename(a, aside)
            os.rename(b, a)
            os.rename(aside, b)
            self.swaps += 1

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    async with sandbox_at(tmp_path) as box:
        yield box


class TestDirectorySwaps:
    async def test_no_temporary_file_stays_behind(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a").mkdir()
        (sandbox.ws / "b").mkdir()
        landed: list[str] = []
        with Swapper(sandbox.ws) as swapper:
            for number in range(CALLS):
                name = f"f{number}.txt"
                result = await sandbox.call(
                    "file_write",
                    path=f"/workspace/a/{name}",
                    content=f"content {number}",
                )
                if result.is_error:
                    assert result.error is not None
                    assert result.error.kind.value == "execution_error", result.output_text
                    assert any(why in result.error.message for why in SWAPPED), result.output_text
                    assert "Traceback" not in result.output_text
                else:
                    landed.append(name)
        assert swapper.swaps > 0
        assert landed  # some writes went through between swaps
        for directory in (sandbox.ws, sandbox.ws / "a", sandbox.ws / "b"):
            assert leftovers(directory) == []
        for name in landed:  # each write that succeeded is in one of the two, whole
            found = [d / name for d in (sandbox.ws / "a", sandbox.ws / "b") if (d / name).exists()]
            assert len(found) == 1
            assert found[0].read_text() == f"content {name[1:-4]}"
