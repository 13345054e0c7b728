"""Atomic file tools: a change lands whole or not at all, whatever interrupts it.

``file_write``, ``file_edit`` and ``attachment_save`` write a temporary file beside the
target and the host renames it over the target after the guest succeeded. Each test drives
the real runtime into a failure -- a full disk, a read-only file system, a timeout, the
host killed, a link planted at the target -- and checks the file afterwards, every time.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolcage.policies import GrantedMount, Principal
from toolcage.runtime import Attachment, ToolExecutionContext, ToolExecutionError, ToolResult
from toolcage.runtime.wasm import WasmTool
from toolcage.runtime.wasm._commit import ReplaceSpec

from ._tmpfs import remount_read_only, tmpfs
from .conftest import CONFIG, Plant, Sandbox, sandbox_at

pytestmark = pytest.mark.anyio

TEMP = re.compile(r"^\.toolcage-[0-9a-f]{32}\.tmp$")

BIG_ARGUMENTS = """
[limits]
max_argument_bytes = 67108864
"""


def leftovers(directory: Path) -> list[str]:
    """Temporary files of the file tools left in ``directory``."""
    return sorted(name for name in os.listdir(directory) if TEMP.match(name))


async def no_leftovers(directory: Path) -> None:
    """Wait until no temporary file is left (a stopped call removes its own as it ends)."""
    while leftovers(directory):  # noqa: ASYNC110 (a file, not an event of ours, is awaited)
        await anyio.sleep(0.01)


def attached(data: bytes, name: str = "upload.bin") -> ToolExecutionContext:
    return ToolExecutionContext(attachments=(Attachment(name, "application/octet-stream", data),))


class TestFullFileSystem:
    """/workspace and /shared on 1 MiB tmpfs: a write that does not fit changes nothing."""

    @pytest.fixture
    async def full(self, tmp_path: Path) -> AsyncIterator[Sandbox]:
        with tmpfs(tmp_path / "ws", "1m"), tmpfs(tmp_path / "shared", "1m"):
            async with sandbox_at(tmp_path, BIG_ARGUMENTS) as sandbox:
                yield sandbox

    async def test_overwrite_and_append_keep_the_old_content(self, full: Sandbox) -> None:
        old = "old line\n" * 50_000  # 450 kB: a new copy beside it does not fit
        for i in range(12):
            (full.ws / "f.txt").write_text(old)
            size = 650_000 + i * 60_000  # some fit alone (the old code's O_TRUNC), some not
            mode = "append" if i % 3 == 2 else "overwrite"
            message = await full.fails(
                "file_write", "execution_error", path="f.txt", content="n" * size, mode=mode
            )
            assert "the file system is full" in message
            assert "left as it was" in message
            assert (full.ws / "f.txt").read_text() == old
            assert os.listdir(full.ws) == ["f.txt"]

    async def test_edit_keeps_the_original(self, full: Sandbox) -> None:
        original = "x = 1\n" * 100_000 + "MARK\n"  # 600 kB
        for i in range(12):
            (full.ws / "e.py").write_text(original)
            message = await full.fails(
                "file_edit",
                "execution_error",
                path="e.py",
                old_string="MARK",
                new_string="y" * (i * 50_000 + 1),
            )
            assert "the file system is full" in message
            assert (full.ws / "e.py").read_text() == original
            assert os.listdir(full.ws) == ["e.py"]

    async def test_attachment_overwrite_keeps_the_old_file(self, full: Sandbox) -> None:
        old = bytes(range(256)) * 2000  # 512 kB
        for i in range(12):
            (full.shared / "a.bin").write_bytes(old)
            ctx = attached(b"\x01" * (600_000 + i * 60_000))
            result = await full.runtime.execute(
                "attachment_save",
                {"attachment": "upload.bin", "path": "/shared/a.bin", "overwrite": True},
                ctx,
            )
            assert result.error is not None, result.output_text
            assert "the file system is full" in result.error.message
            assert (full.shared / "a.bin").read_bytes() == old
            assert os.listdir(full.shared) == ["a.bin"]

    async def test_a_write_that_fits_lands(self, full: Sandbox) -> None:
        (full.ws / "f.txt").write_text("old")
        await full.ok("file_write", path="f.txt", content="n" * 300_000)
        assert (full.ws / "f.txt").read_text() == "n" * 300_000
        assert os.listdir(full.ws) == ["f.txt"]


class TestReadOnlyFileSystem:
    @pytest.fixture
    async def frozen(self, tmp_path: Path) -> AsyncIterator[Sandbox]:
        with tmpfs(tmp_path / "ws", "1m"), tmpfs(tmp_path / "shared", "1m"):
            (tmp_path / "ws/f.txt").write_text("kept")
            (tmp_path / "shared/a.bin").write_text("kept")
            remount_read_only(tmp_path / "ws")
            remount_read_only(tmp_path / "shared")
            async with sandbox_at(tmp_path) as sandbox:
                yield sandbox

    @pytest.mark.parametrize(
        ("tool", "args"),
        [
            ("file_write", {"path": "f.txt", "content": "new"}),
            ("file_write", {"path": "f.txt", "content": "new", "mode": "append"}),
            ("file_write", {"path": "new/g.txt", "content": "x", "create_parents": True}),
            ("file_edit", {"path": "f.txt", "old_string": "kept", "new_string": "new"}),
            ("file_delete", {"path": "f.txt"}),
            ("attachment_save", {"attachment": "upload.bin", "path": "/shared/a.bin"}),
        ],
    )
    async def test_the_message_says_read_only_file_system(
        self, frozen: Sandbox, tool: str, args: Mapping[str, Any]
    ) -> None:
        result = await frozen.runtime.execute(tool, dict(args), attached(b"new"))
        assert result.error is not None, result.output_text
        assert result.error.kind.value == "permission_denied"
        assert "read-only file system" in result.error.message
        assert (frozen.ws / "f.txt").read_text() == "kept"
        assert (frozen.shared / "a.bin").read_text() == "kept"

    async def test_reading_still_works(self, frozen: Sandbox) -> None:
        assert await frozen.ok("file_read", path="f.txt") == "kept"


class TestTimeouts:
    async def test_a_timeout_never_leaves_new_or_partial_content(self, tmp_path: Path) -> None:
        """A deadline that falls anywhere in a large write: the old file, or the new file
        and success. The size adapts so that the deadline keeps falling near the end."""
        extra = BIG_ARGUMENTS + "[tools.file_write]\ntimeout = 0.25\nmemory_bytes = 268435456\n"
        async with sandbox_at(tmp_path, extra) as box:
            target = box.ws / "big.txt"
            expected = "start"
            target.write_text(expected)
            size = 1 << 20
            outcomes = {"ok": 0, "timeout": 0}
            for i in range(40):
                content = chr(ord("a") + i % 26) * size
                result = await box.call("file_write", path="big.txt", content=content)
                if result.error is None:
                    outcomes["ok"] += 1
                    assert target.read_text() == content, "success reported, other content"
                    assert leftovers(box.ws) == []
                    expected = content
                    size = min(size * 3 // 2, 24 << 20)
                else:
                    assert result.error.kind.value == "timeout", result.error.message
                    outcomes["timeout"] += 1
                    assert target.read_text() == expected, f"timeout at {size} bytes, new content"
                    await no_leftovers(box.ws)
                    assert target.read_text() == expected, "new content landed after a timeout"
                    size = max(size * 2 // 3, 1 << 16)
            assert sum(outcomes.values()) == 40


WRITER = """
import sys, anyio
from toolcage.runtime import Runtime

async def main(config, size):
    async with Runtime.from_config(config) as runtime:
        current = "0"
        for i in range(10**6):
            new = chr(ord("A") + i % 26)
            if i % 2:
                args = {"path": "t.txt", "old_string": current * size, "new_string": new * size}
                result = await runtime.execute("file_edit", args)
            else:
                args = {"path": "t.txt", "content": new * size}
                result = await runtime.execute("file_write", args)
            assert result.error is None, result.output_text
            current = new
            print(new, flush=True)

anyio.run(main, sys.argv[1], int(sys.argv[2]))
"""


class TestHostKilled:
    def test_sigkill_never_leaves_a_partial_or_empty_file(self, tmp_path: Path) -> None:
        size = 2 << 20
        for name in ("ws", "docs", "shared"):
            (tmp_path / name).mkdir()
        config = tmp_path / "toolcage.toml"
        config.write_text(CONFIG + BIG_ARGUMENTS)
        target = tmp_path / "ws/t.txt"
        target.write_text("0" * size)
        rng = random.Random(20261123)  # noqa: S311 (kill moments, not secrets)
        for i in range(12):
            with subprocess.Popen(
                [sys.executable, "-c", WRITER, str(config), str(size)],
                stdout=subprocess.PIPE,
                text=True,
            ) as child:
                assert child.stdout is not None
                seen = [child.stdout.readline().strip()]  # one write done: the loop runs
                assert seen[0], "the writer ended before its first write"
                watch_then_kill(child, target, size, rng.uniform(0, 0.4), mid_write=bool(i % 2))
                seen += child.stdout.read().split()
            data = target.read_text()
            assert len(data) == size, f"{len(data)} bytes after the kill"
            assert len(set(data)) == 1, "a mixture of two versions"
            last = seen[-1]
            assert data[0] in (last, chr(ord("A") + (ord(last) - ord("A") + 1) % 26))
            # A killed host may leave its temporary file (never the target) behind.
            others = set(os.listdir(tmp_path / "ws")) - {"t.txt"}
            assert all(TEMP.match(name) for name in others), others
            for name in others:
                (tmp_path / "ws" / name).unlink()


def watch_then_kill(
    child: subprocess.Popen[str], target: Path, size: int, delay: float, *, mid_write: bool
) -> None:
    """SIGKILL ``child`` after ``delay`` seconds -- or at once when ``target`` is seen with
    another size (caught while it is being rewritten in place), or, with ``mid_write``,
    as soon as a temporary file appears beside it (a write under way)."""
    end = time.monotonic() + delay
    while time.monotonic() < end:
        try:
            if target.stat().st_size != size:
                break
        except FileNotFoundError:
            break
        if mid_write and leftovers(target.parent):
            break
    child.send_signal(signal.SIGKILL)


class TestLinksAtTheTarget:
    """A link swapped in at the target after the check is replaced, never written through."""

    KINDS = ("hard link out", "hard link in", "symlink in", "symlink out")

    @pytest.fixture
    async def box(self, tmp_path: Path) -> AsyncIterator[Sandbox]:
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside/secret").write_text("SECRET")
        async with sandbox_at(tmp_path) as sandbox:
            (sandbox.ws / "inside.txt").write_text("INSIDE")
            yield sandbox

    def plant(self, box: Sandbox, target: Path, kind: str) -> None:
        """After the check of the next call, ``target`` becomes a link of ``kind``."""
        outside = box.ws.parent / "outside/secret"

        def swap() -> None:
            spare = target.with_name(".spare")
            if kind == "hard link out":
                os.link(outside, spare)
            elif kind == "hard link in":
                os.link(box.ws / "inside.txt", spare)
            elif kind == "symlink in":
                spare.symlink_to(os.path.relpath(box.ws / "inside.txt", target.parent))
            else:
                spare.symlink_to(os.path.relpath(outside, target.parent))
            os.replace(spare, target)

        box.runtime.pipeline.checks.append(Plant(swap))

    def assert_untouched(self, box: Sandbox) -> None:
        assert (box.ws.parent / "outside/secret").read_text() == "SECRET"
        assert (box.ws / "inside.txt").read_text() == "INSIDE"

    @pytest.mark.parametrize("kind", KINDS)
    @pytest.mark.parametrize("mode", ["overwrite", "append"])
    async def test_file_write(self, box: Sandbox, kind: str, mode: str) -> None:
        target = box.ws / "t.txt"
        target.write_text("old")
        self.plant(box, target, kind)
        result = await box.call("file_write", path="t.txt", content="NEW", mode=mode)
        self.assert_untouched(box)
        if mode == "overwrite":
            assert result.error is None, result.output_text
            assert not target.is_symlink()
            assert target.read_text() == "NEW"
            assert target.stat().st_nlink == 1
        else:  # an append reads the old content first: a link there is refused
            assert result.error is not None
            assert result.error.kind.value == "permission_denied", result.error.message
        assert leftovers(box.ws) == []

    @pytest.mark.parametrize("kind", KINDS)
    async def test_file_edit(self, box: Sandbox, kind: str) -> None:
        target = box.ws / "t.txt"
        target.write_text("old")
        self.plant(box, target, kind)
        await box.fails(
            "file_edit", "permission_denied", path="t.txt", old_string="SECRET", new_string="X"
        )
        self.assert_untouched(box)
        assert leftovers(box.ws) == []

    @pytest.mark.parametrize("kind", KINDS)
    async def test_attachment_save(self, box: Sandbox, kind: str) -> None:
        target = box.shared / "t.bin"
        target.write_text("old")
        self.plant(box, target, kind)
        result = await box.runtime.execute(
            "attachment_save",
            {"attachment": "upload.bin", "path": "/shared/t.bin", "overwrite": True},
            attached(b"NEW"),
        )
        assert result.error is None, result.output_text
        assert not target.is_symlink()
        assert target.read_bytes() == b"NEW"
        self.assert_untouched(box)
        assert leftovers(box.shared) == []


class TestTemporaryFiles:
    async def test_failures_leave_no_temporary_file(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "d").mkdir()
        (sandbox.ws / "f.txt").write_text("x")
        results: list[ToolResult] = [
            await sandbox.call("file_write", path="f.txt", content="y", mode="create"),
            await sandbox.call("file_write", path="d", content="y"),
            await sandbox.call("file_write", path="no/such/dir.txt", content="y"),
            await sandbox.call("file_edit", path="f.txt", old_string="zz", new_string="y"),
            await sandbox.call("file_edit", path="d", old_string="x", new_string="y"),
        ]
        assert all(r.is_error for r in results), [r.output_text for r in results]
        assert "is a directory" in results[1].output_text
        assert sorted(os.listdir(sandbox.ws)) == ["d", "f.txt"]
        assert (sandbox.ws / "f.txt").read_text() == "x"

    async def test_look_alike_files_are_left_alone(self, sandbox: Sandbox) -> None:
        planted = [f".toolcage-{i:032x}.tmp" for i in range(50)]
        for name in planted:
            (sandbox.ws / name).write_text("planted")
        for i in range(20):
            await sandbox.ok("file_write", path="f.txt", content=str(i))
            await sandbox.ok("file_edit", path="f.txt", old_string=str(i), new_string=f"{i}!")
        assert (sandbox.ws / "f.txt").read_text() == "19!"
        assert sorted(os.listdir(sandbox.ws)) == sorted([*planted, "f.txt"])
        assert all((sandbox.ws / name).read_text() == "planted" for name in planted)

    async def test_permission_bits_and_owner_are_kept(self, sandbox: Sandbox) -> None:
        target = sandbox.ws / "f.txt"
        target.write_text("a")
        target.chmod(0o640)
        owner = (4321, 4322) if os.geteuid() == 0 else (os.getuid(), os.getgid())
        os.chown(target, *owner)
        await sandbox.ok("file_write", path="f.txt", content="b")
        await sandbox.ok("file_edit", path="f.txt", old_string="b", new_string="c")
        await sandbox.ok("file_write", path="f.txt", content="d", mode="append")
        assert target.read_text() == "cd"
        info = target.stat()
        assert info.st_mode & 0o7777 == 0o640
        assert (info.st_uid, info.st_gid) == owner

    async def test_the_guest_creates_its_temporary_file_exclusively(self, sandbox: Sandbox) -> None:
        tool = sandbox.runtime.registry.get("file_write", "default")
        assert isinstance(tool, WasmTool)
        (sandbox.ws / ".toolcage-planted.tmp").write_text("planted")
        document = {"path": "/workspace/f.txt", "content": "x", "_temp": ".toolcage-planted.tmp"}
        mounts = tool.mounts.mounts_for("file_write", "side_effecting", Principal())
        with pytest.raises(ToolExecutionError, match="already exists"):
            await tool.runner.run("file_write", json.dumps(document).encode(), mounts, tool.limits)
        assert (sandbox.ws / ".toolcage-planted.tmp").read_text() == "planted"
        assert not (sandbox.ws / "f.txt").exists()

    @pytest.mark.parametrize("planted", ["hard link", "symbolic link", "not empty"])
    async def test_the_guest_writes_only_into_the_empty_file_the_host_made(
        self, sandbox: Sandbox, planted: str
    ) -> None:
        tool = sandbox.runtime.registry.get("file_write", "default")
        assert isinstance(tool, WasmTool)
        victim = sandbox.docs / "victim.txt"
        victim.write_text("kept")
        temp = sandbox.ws / ".toolcage-planted.tmp"
        if planted == "hard link":
            os.link(victim, temp)
        elif planted == "symbolic link":
            temp.symlink_to(victim)
        else:
            temp.write_text("kept")
        document = {
            "path": "/workspace/f.txt",
            "content": "x",
            "_temp": temp.name,
            "_temp_made": True,
        }
        mounts = tool.mounts.mounts_for("file_write", "side_effecting", Principal())
        with pytest.raises(ToolExecutionError, match="already exists"):
            await tool.runner.run("file_write", json.dumps(document).encode(), mounts, tool.limits)
        assert victim.read_text() == "kept"
        assert planted == "symbolic link" or temp.read_text() == "kept"

    def test_names_are_unpredictable(self, tmp_path: Path) -> None:
        spec = ReplaceSpec.from_json({"path": "path"}, {"properties": {"path": {}}})
        mount = GrantedMount(tmp_path, "/workspace", writable=True)
        names = {spec.prepare({"path": "/workspace/f"}, (mount,)).temp for _ in range(2000)}
        assert len(names) == 2000
        assert all(TEMP.match(name) for name in names)

    def test_a_file_that_appeared_meanwhile_is_not_replaced(self, tmp_path: Path) -> None:
        """mode=create: the commit refuses a target created after the guest looked."""
        properties = {"path": {}, "mode": {"default": "overwrite"}}
        raw = {"path": "path", "no_replace_when": {"mode": "create"}}
        spec = ReplaceSpec.from_json(raw, {"properties": properties})
        mount = GrantedMount(tmp_path, "/workspace", writable=True)
        create = spec.prepare({"path": "/workspace/f", "mode": "create"}, (mount,))
        (tmp_path / create.temp).write_text("new")
        (tmp_path / "f").write_text("appeared")
        with pytest.raises(ToolExecutionError, match="already exists; it was not replaced"):
            create.commit()
        create.discard()
        assert os.listdir(tmp_path) == ["f"]
        assert (tmp_path / "f").read_text() == "appeared"
        overwrite = spec.prepare({"path": "/workspace/f"}, (mount,))  # the default replaces
        (tmp_path / overwrite.temp).write_text("new")
        overwrite.commit()
        assert os.listdir(tmp_path) == ["f"]
        assert (tmp_path / "f").read_text() == "new"

    async def test_append_keeps_what_was_there(self, sandbox: Sandbox) -> None:
        head = "".join(f"line {i}\n" for i in range(300_000))  # larger than one copy chunk
        (sandbox.ws / "log.txt").write_text(head)
        await sandbox.ok("file_write", path="log.txt", content="tail\n", mode="append")
        assert (sandbox.ws / "log.txt").read_text() == head + "tail\n"


class TestListingWhileFilesComeAndGo:
    """Temporary files appear and vanish beside every write: listings must not fail on them."""

    @staticmethod
    def churn(directory: Path, stop: threading.Event) -> None:
        """A file that comes and goes about a thousand times a second, as writes' temporary
        files do under a busy agent."""
        while not stop.is_set():
            (directory / ".churn").touch()
            stop.wait(0.0005)
            (directory / ".churn").unlink()
            stop.wait(0.0005)

    async def test_file_list_and_file_search_succeed(self, sandbox: Sandbox) -> None:
        for i in range(20):
            (sandbox.ws / f"f{i}.txt").write_text(f"needle {i}\n")
        stop = threading.Event()
        churner = threading.Thread(target=self.churn, args=(sandbox.ws, stop))
        churner.start()
        try:
            for _ in range(100):
                listing = await sandbox.ok("file_list", path="/workspace")
                assert "f19.txt" in listing
                hits = await sandbox.ok("file_search", path="/workspace", query="needle 7")
                assert "f7.txt" in hits
        finally:
            stop.set()
            churner.join()
