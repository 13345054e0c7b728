"""What a file_search walk does with each kind of entry it meets in a directory.

The files of a directory are read many to a host call (``read_many``): each entry is opened
by name in the directory's own descriptor without following a link, checked to be a regular
file, and read. Beside regular files with hits, a directory here holds a link to a file
outside the mounts, a FIFO, a hard link and binary files, and one name is swapped between a
file and a link out while searches run: only the regular text files' hits may show.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .conftest import Sandbox

pytestmark = pytest.mark.anyio

SECRET = "needle-outside-do-not-show"  # noqa: S105 (a sentinel, not a password)


def plant(sandbox: Sandbox) -> Path:
    """A secret outside the mounts, and the directory ``ws/mixed`` of every kind of entry."""
    outside = sandbox.ws.parent / "outside.txt"
    outside.write_text(SECRET + "\n")
    mixed = sandbox.ws / "mixed"
    mixed.mkdir()
    for n in range(150):  # more than one directory's worth of ordinary files around them
        (mixed / f"plain{n:03d}.txt").write_text(
            f"line one\nneedle {n}\n" if n % 50 == 0 else "x\n"
        )
    (mixed / "link_out.txt").symlink_to(outside)
    (mixed / "link_in.txt").symlink_to("plain000.txt")
    os.mkfifo(mixed / "fifo.txt")
    os.link(outside, mixed / "hard.txt")
    (mixed / "bin_early.txt").write_bytes(b"needle early\n" + b"y" * 100 + b"\0")
    (mixed / "bin_late.txt").write_bytes(b"needle late\n" + b"y" * 9000 + b"\0\n")
    return mixed


class TestEntries:
    async def test_only_regular_text_files_are_searched(self, sandbox: Sandbox) -> None:
        plant(sandbox)
        out = await sandbox.ok("file_search", path="/workspace/mixed", query="needle")
        hits = sorted(line for line in out.splitlines() if not line.startswith("["))
        assert hits == [
            "/workspace/mixed/bin_late.txt:1:needle late",  # its NUL is past the first 8 KiB
            "/workspace/mixed/plain000.txt:2:needle 0",
            "/workspace/mixed/plain050.txt:2:needle 50",
            "/workspace/mixed/plain100.txt:2:needle 100",
        ]
        assert SECRET not in out
        assert "[1 hard-linked files were skipped: /workspace/mixed/hard.txt]" in out

    async def test_the_count_of_files_searched_leaves_out_links_and_fifos(
        self, sandbox: Sandbox
    ) -> None:
        plant(sandbox)
        result = await sandbox.call("file_search", path="/workspace/mixed", query="nowhere")
        assert not result.is_error, result.output_text
        # 150 plain files, hard.txt and the two binary ones; no link, no FIFO.
        assert result.output_text == "no matches in 153 files under /workspace/mixed\n"


@contextmanager
def flipping(name: Path, target: Path) -> Iterator[None]:
    """``name`` swapped without pause between a file with a hit and a link to ``target``."""
    stop = threading.Event()

    def flip() -> None:
        tmp = name.with_suffix(".tmp")
        while not stop.is_set():
            tmp.symlink_to(target)
            os.replace(tmp, name)
            tmp.write_text("needle inside\n")
            os.replace(tmp, name)

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        yield
    finally:
        stop.set()
        flipper.join()


class TestRaces:
    async def test_a_name_swapped_for_a_link_out_during_walks(self, sandbox: Sandbox) -> None:
        outside = sandbox.ws.parent / "outside.txt"
        outside.write_text(SECRET + "\n")
        for n in range(50):
            (sandbox.ws / f"f{n:02d}.txt").write_text("needle\n")
        with flipping(sandbox.ws / "race.txt", outside):
            for _ in range(100):
                out = await sandbox.ok("file_search", path="/workspace", query="needle")
                assert SECRET not in out
        # The control: once the name stays a file, its hit shows.
        (sandbox.ws / "race.txt").unlink()
        (sandbox.ws / "race.txt").write_text("needle inside\n")
        out = await sandbox.ok("file_search", path="/workspace", query="needle")
        assert "/workspace/race.txt:1:needle inside" in out
