"""file_read, file_list and file_search read through the host's ``fs`` binding.

Through the full pipeline: what the path policy checked may change before the guest reads
it (a planted FIFO, a link out, a directory swapped for a link), and the binding still
refuses, with the same messages the tools always gave; large files, long listings and many
files in one directory come out whole.
"""

from __future__ import annotations

import os
import threading

import pytest

from .conftest import Plant, Sandbox

pytestmark = pytest.mark.anyio

SECRET = "fs-read-sentinel"  # noqa: S105 (a sentinel, not a password)


def plant_fifo(sandbox: Sandbox, name: str) -> Plant:
    """After the path check, ``ws/NAME`` becomes a FIFO (no writer will ever open it)."""

    def swap() -> None:
        target = sandbox.ws / name
        if target.is_dir():
            target.rmdir()
        else:
            target.unlink()
        os.mkfifo(target)

    return Plant(swap)


class TestMessagesAsBefore:
    @pytest.mark.parametrize(
        ("tool", "args", "message"),
        [
            ("file_read", {"path": "missing"}, "cannot read: /workspace/missing does not exist"),
            ("file_read", {"path": "d"}, "cannot read: /workspace/d is a directory"),
            (
                "file_read",
                {"path": "bin"},
                "/workspace/bin is a binary file (3 bytes), not UTF-8 text; file_read only "
                "returns text: use file_list for its size, or another tool that understands the "
                "format",
            ),
            (
                "file_read",
                {"path": "big"},
                "/workspace/big is too large to read (9437184 bytes; the cap is 8388608 bytes); "
                "use file_search to find the part you need",
            ),
            ("file_list", {"path": "missing"}, "cannot list: /workspace/missing does not exist"),
            (
                "file_search",
                {"path": "missing", "query": "x"},
                "cannot search: /workspace/missing does not exist",
            ),
        ],
    )
    async def test_failures(
        self, sandbox: Sandbox, tool: str, args: dict[str, object], message: str
    ) -> None:
        (sandbox.ws / "d").mkdir()
        (sandbox.ws / "bin").write_bytes(b"a\x00b")
        with (sandbox.ws / "big").open("wb") as f:
            f.truncate(9 << 20)
        assert await sandbox.fails(tool, "execution_error", **args) == message

    @pytest.mark.parametrize(
        ("tool", "args", "message"),
        [
            ("file_read", {}, "cannot read: /workspace/t is not a regular file (a FIFO, "),
            ("file_search", {"query": "x"}, "cannot search: /workspace/t is not a regular "),
        ],
    )
    async def test_a_fifo_planted_after_the_check_is_never_read(
        self, sandbox: Sandbox, tool: str, args: dict[str, object], message: str
    ) -> None:
        # Opened without blocking (no writer will ever come) and refused as not regular.
        (sandbox.ws / "t").write_text("x")
        sandbox.runtime.pipeline.checks.append(plant_fifo(sandbox, "t"))
        assert (await sandbox.fails(tool, "execution_error", path="t", **args)).startswith(message)

    async def test_a_fifo_planted_after_the_check_is_listed_not_opened(
        self, sandbox: Sandbox
    ) -> None:
        (sandbox.ws / "t").write_text("x")
        sandbox.runtime.pipeline.checks.append(plant_fifo(sandbox, "t"))
        assert await sandbox.ok("file_list", path="t") == "file\t0\t/workspace/t\n"
        os.mkfifo(sandbox.ws / "u")
        assert await sandbox.ok("file_list", path="/workspace") == "other\t-\tt\nother\t-\tu\n"
        assert "no matches in 0 files" in await sandbox.ok(
            "file_search", path="/workspace", query="x"
        )

    @pytest.mark.parametrize("spelling", ["relative", "absolute"])
    @pytest.mark.parametrize(
        ("tool", "args", "what"),
        [
            ("file_read", {}, "cannot read"),
            ("file_list", {}, "cannot list"),
            ("file_search", {"query": SECRET}, "cannot search"),
        ],
    )
    async def test_a_link_out_planted_after_the_check_is_refused(
        self, sandbox: Sandbox, tool: str, args: dict[str, object], what: str, spelling: str
    ) -> None:
        outside = sandbox.ws.parent / "outside"
        outside.mkdir()
        (outside / "f").write_text(SECRET)
        (sandbox.ws / "t").write_text("x")
        target = outside if tool != "file_read" else outside / "f"

        def swap() -> None:
            (sandbox.ws / "t").unlink()
            relative = os.path.relpath(target, sandbox.ws)
            (sandbox.ws / "t").symlink_to(relative if spelling == "relative" else target)

        sandbox.runtime.pipeline.checks.append(Plant(swap))
        result = await sandbox.call(tool, path="t", **args)
        assert SECRET not in result.output_text
        assert result.error is not None
        assert result.error.kind.value == "permission_denied"
        assert result.error.message == (
            f"{what}: /workspace/t is not readable here (no permission)"
        )


class TestRaces:
    async def test_a_directory_swapped_for_a_link_out_while_walked(self, sandbox: Sandbox) -> None:
        outside = sandbox.ws.parent / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text(SECRET)
        (sandbox.ws / "flip").mkdir()
        (sandbox.ws / "flip/inside.txt").write_text("harmless")
        stop = threading.Event()

        def flip() -> None:
            real, link = sandbox.ws / "flip.real", sandbox.ws / "flip.link"
            link.symlink_to(outside)
            while not stop.is_set():
                os.rename(sandbox.ws / "flip", real)
                os.rename(link, sandbox.ws / "flip")
                os.rename(sandbox.ws / "flip", link)
                os.rename(real, sandbox.ws / "flip")

        flipper = threading.Thread(target=flip)
        flipper.start()
        try:
            for _ in range(40):
                for tool, args in (
                    ("file_search", {"path": "/workspace", "query": SECRET[:8]}),
                    ("file_search", {"path": "/workspace/flip", "query": SECRET[:8]}),
                    ("file_list", {"path": "/workspace", "depth": 3}),
                    ("file_list", {"path": "/workspace/flip"}),
                ):
                    result = await sandbox.call(tool, **args)
                    assert SECRET not in result.output_text
                    assert "secret.txt" not in result.output_text
        finally:
            stop.set()
            flipper.join()


class TestWhole:
    async def test_a_file_over_the_first_read_is_read_whole(self, sandbox: Sandbox) -> None:
        text = "".join(f"line {i}\n" for i in range(40_000))  # ~390 KB: a second read
        (sandbox.ws / "long.txt").write_text(text)
        end = await sandbox.ok("file_read", path="long.txt", offset=39_998)
        assert end == "line 39998\nline 39999\n"

    async def test_a_long_listing(self, sandbox: Sandbox) -> None:
        names = sorted(f"f-{i:04d}.txt" for i in range(400))  # 8 KB listed: a second call
        for name in names:
            (sandbox.ws / name).write_text("x")
        listed = (await sandbox.ok("file_list", path="/workspace")).splitlines()
        assert listed == [f"file\t1\t{name}" for name in names]

    async def test_search_over_files_larger_than_a_batch(self, sandbox: Sandbox) -> None:
        # 1.5 MiB files: a batch holds few first windows, and each file needs a second read.
        body = ("filler " * 20 + "\n") * 10_900
        for i in range(9):
            (sandbox.ws / f"big{i}.txt").write_text(f"head-needle {i}\n" + body + "tail-needle\n")
        (sandbox.ws / "small.txt").write_text("small-needle\n")
        out = await sandbox.ok("file_search", path="/workspace", query="needle", max_results=100)
        lines = sorted(out.splitlines())
        last = 1 + body.count("\n") + 1
        expected = [f"/workspace/big{i}.txt:1:head-needle {i}" for i in range(9)]
        expected += [f"/workspace/big{i}.txt:{last}:tail-needle" for i in range(9)]
        assert lines == sorted([*expected, "/workspace/small.txt:1:small-needle"])

    async def test_many_files_of_one_directory(self, sandbox: Sandbox) -> None:
        for i in range(400):  # 8 MB: more than one batch of reads
            (sandbox.ws / f"f{i:03d}.txt").write_text(f"{'x' * 20_000}\nneedle {i}\n")
        out = await sandbox.ok("file_search", path="/workspace", query="needle", max_results=5000)
        assert sorted(out.splitlines()) == sorted(
            f"/workspace/f{i:03d}.txt:2:needle {i}" for i in range(400)
        )


@pytest.mark.parametrize("tool", ["file_read", "file_list", "file_search"])
async def test_the_reading_tools_need_fs_and_no_preopens(sandbox: Sandbox, tool: str) -> None:
    needs = getattr(sandbox.runtime.registry.get(tool), "needs", ())
    assert "fs" in needs
    assert "mounts" not in needs


class TestLiteralMatching:
    @pytest.mark.parametrize("needle", ["q", "qz", "q-z", "quick-zebra-42", "x" * 40])
    async def test_every_position_around_the_16_byte_steps(
        self, sandbox: Sandbox, needle: str
    ) -> None:
        # Line i puts the needle at byte i of a 0-filled line; the last has it at the very end.
        lines = ["." * i + needle + "." * (40 - i) for i in range(40)]
        (sandbox.ws / "f.txt").write_text("\n".join(lines) + "\n" + "." * 33 + needle)
        out = await sandbox.ok("file_search", path="f.txt", query=needle, max_results=5000)
        numbers = [int(line.split(":")[1]) for line in out.splitlines()]
        assert numbers == list(range(1, 42))

    async def test_a_needle_of_one_repeated_byte_in_a_run_of_it(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("a" * 200_000 + "b\n" + "a" * 5000 + "\n")
        out = await sandbox.ok("file_search", path="a.txt", query="a" * 300 + "b")
        assert [line.split(":")[1] for line in out.splitlines()] == ["1"]
        out = await sandbox.ok("file_search", path="a.txt", query="a" * 3000 + "ba")
        assert "no matches in 1 files" in out

    async def test_ignore_case(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "c.txt").write_text("x" * 70 + "NeEdLe\n" + "needle\n" + "nEEDLE" * 3 + "\n")
        out = await sandbox.ok("file_search", path="c.txt", query="NEEDLE", ignore_case=True)
        assert [line.split(":")[1] for line in out.splitlines()] == ["1", "2", "3"]
