"""file_search over files of any size: read in windows, hits as if the file were whole.

A reference search over the whole file in Python gives the expected hits; the guest, which
holds 1 MiB of a file at a time, must print exactly those, wherever they fall relative to
its windows.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .conftest import Sandbox, sandbox_at

pytestmark = pytest.mark.anyio

LINE_CAP = 240


def reference(
    path: str, text: bytes, query: bytes, *, ignore_case: bool = False, wildcard: bool = False
) -> list[str]:
    """The hits of file_search in one file, found over the whole text at once."""
    hay = text.lower() if ignore_case else text
    query = query.lower() if ignore_case else query
    hits: list[str] = []
    if wildcard:
        pattern = "*" + query.decode() + "*"
        for number, line in enumerate(text.split(b"\n"), 1):
            probe = line.lower() if ignore_case else line
            if fnmatch.fnmatchcase(probe.decode(), pattern):
                hits.append(f"{path}:{number}:{line[:LINE_CAP].decode()}")
        return hits
    at = hay.find(query)
    while at >= 0:
        start = text.rfind(b"\n", 0, at) + 1
        stop = text.find(b"\n", at)
        stop = len(text) if stop < 0 else stop
        number = text.count(b"\n", 0, at) + 1
        hits.append(f"{path}:{number}:{text[start:stop][:LINE_CAP].decode()}")
        at = hay.find(query, stop)
    return hits


def random_text(rng: random.Random, size: int, needle: bytes) -> bytes:
    """Lines of random length, a needle in some of them, and needles placed across each
    MiB boundary."""
    out = bytearray()
    boundary = 1 << 20
    while len(out) < size:
        if len(out) + 4096 > boundary:
            # a line whose needle straddles the next MiB boundary, at a varying offset
            pad = boundary - len(out) - rng.randrange(1, len(needle))
            out += b"b" * max(pad, 0) + needle + b" tail\n"
            boundary += 1 << 20
            continue
        length = rng.choice([0, 1, 5, 40, 80, 200, 1500, 4000])
        line = bytearray(rng.choice(b"abcdefgh NEDL") for _ in range(length))
        if rng.random() < 0.05 and length > len(needle):
            at = rng.randrange(0, length - len(needle))
            line[at : at + len(needle)] = needle
        out += line + b"\n"
    return bytes(out)


@pytest.fixture
async def sandbox(tmp_path: Path) -> AsyncIterator[Sandbox]:
    """The sandbox, with output kept whole (no truncation) for comparing every hit."""
    async with sandbox_at(tmp_path, "[limits]\ntruncate_bytes = 16777216\n") as box:
        yield box


@pytest.fixture(scope="module")
def corpus() -> bytes:
    rng = random.Random(7)  # noqa: S311 (test data, not secrets)
    return random_text(rng, 3_600_000, b"needle")


class TestLargeFiles:
    async def test_a_file_larger_than_the_guest_memory_is_searched(self, sandbox: Sandbox) -> None:
        block = b"".join(b"filler line %d\n" % i for i in range(100_000))
        blocks = 0
        with (sandbox.ws / "big.log").open("wb") as f:
            while f.tell() < 80 << 20:  # more than the guest's 64 MiB memory limit
                f.write(block)
                blocks += 1
            f.write(b"the Needle at the very end\n")
        (sandbox.ws / "small.txt").write_text("a needle here\n")
        last = f"/workspace/big.log:{blocks * 100_000 + 1}:the Needle at the very end"
        out = await sandbox.ok("file_search", path="/workspace", query="Needle")
        assert out.splitlines() == [last]
        out = await sandbox.ok("file_search", path="/workspace", query="NEEDLE", ignore_case=True)
        assert sorted(out.splitlines()) == sorted([last, "/workspace/small.txt:1:a needle here"])

    async def test_past_the_per_file_cap_the_file_is_named(self, sandbox: Sandbox) -> None:
        with (sandbox.ws / "huge.log").open("wb") as f:
            f.write(b"needle at the start\n" + b"text\n" * 2000)  # text as far as it is sniffed
            f.truncate(300 << 20)  # then a hole of NUL bytes: cheap to make and to read
            f.seek(0, 2)
            f.write(b"\nneedle past the cap\n")
        (sandbox.ws / "x\nnote.txt").write_text("needle\n")
        out = await sandbox.ok("file_search", path="/workspace", query="needle")
        lines = out.splitlines()
        assert "/workspace/huge.log:1:needle at the start" in lines
        assert not any("past the cap" in line for line in lines)
        assert "/workspace/x\\x0anote.txt:1:needle" in lines
        assert lines[-1] == (
            "[1 files are larger than 256 MiB; only their first 256 MiB were searched: "
            "/workspace/huge.log]"
        )


class TestWindows:
    @pytest.mark.parametrize(
        ("query", "ignore_case", "wildcard"),
        [
            (b"needle", False, False),
            (b"NEEDLE", True, False),
            (b"e\nN", False, False),  # spans a line break
            (b"le tail\n", False, False),
            (b"a", False, False),  # a hit on most lines
            (b"ne?dle*a", False, True),
            (b"NE*DL", True, True),
        ],
    )
    async def test_hits_match_a_search_of_the_whole_file(
        self, sandbox: Sandbox, corpus: bytes, query: bytes, ignore_case: bool, wildcard: bool
    ) -> None:
        (sandbox.ws / "c.txt").write_bytes(corpus)
        expected = reference(
            "/workspace/c.txt", corpus, query, ignore_case=ignore_case, wildcard=wildcard
        )
        assert len(expected) > 0
        out = await sandbox.ok(
            "file_search",
            path="/workspace/c.txt",
            query=query.decode(),
            ignore_case=ignore_case,
            mode="wildcard" if wildcard else "literal",
            max_results=5000,
        )
        lines = out.splitlines()
        if len(expected) >= 5000:
            assert lines[:5000] == expected[:5000]
            assert lines[5000:] == ["[stopped at max_results=5000]"]
        else:
            assert lines == expected

    async def test_a_line_longer_than_a_window_is_one_hit(self, sandbox: Sandbox) -> None:
        long_line = b"x" * 10 + b"needle" + b"y" * (3 << 20) + b"needle" + b"z" * 100
        (sandbox.ws / "l.txt").write_bytes(long_line + b"\nneedle after\n" + long_line)
        out = await sandbox.ok("file_search", path="/workspace/l.txt", query="needle")
        assert out.splitlines() == [
            "/workspace/l.txt:1:" + long_line[:LINE_CAP].decode(),
            "/workspace/l.txt:2:needle after",
            "/workspace/l.txt:3:" + long_line[:LINE_CAP].decode(),
        ]

    async def test_a_hit_deep_in_a_long_line_keeps_its_line_number(self, sandbox: Sandbox) -> None:
        long_line = b"y" * (5 << 20) + b"needle"
        (sandbox.ws / "l.txt").write_bytes(b"first\n" + long_line + b"\nlast needle\n")
        for mode in ("literal", "wildcard"):
            out = await sandbox.ok(
                "file_search", path="/workspace/l.txt", query="needle", mode=mode
            )
            lines = out.splitlines()
            assert [line.split(":")[1] for line in lines] == ["2", "3"], mode
            assert lines[1] == "/workspace/l.txt:3:last needle"
