"""Every file tool through the full pipeline and real wasmtime: success and each failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolcage.runtime import Attachment, ToolExecutionContext

from .conftest import Plant, Sandbox

pytestmark = pytest.mark.anyio


class TestFileRead:
    async def test_reads_text_by_absolute_and_relative_path(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("héllo\nworld\n")
        assert await sandbox.ok("file_read", path="/workspace/a.txt") == "héllo\nworld\n"
        assert await sandbox.ok("file_read", path="a.txt") == "héllo\nworld\n"

    async def test_line_window(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "n.txt").write_text("".join(f"{i}\n" for i in range(10)))
        assert await sandbox.ok("file_read", path="n.txt", offset=3, limit=2) == "3\n4\n"

    async def test_latin1(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "l.txt").write_bytes("café".encode("latin-1"))
        assert await sandbox.ok("file_read", path="l.txt", encoding="latin-1") == "café"

    async def test_not_found(self, sandbox: Sandbox) -> None:
        message = await sandbox.fails("file_read", "execution_error", path="missing.txt")
        assert "/workspace/missing.txt does not exist" in message

    async def test_directory(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "d").mkdir()
        assert "is a directory" in await sandbox.fails("file_read", "execution_error", path="d")

    async def test_binary_file_is_refused_with_advice(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "b.bin").write_bytes(b"\x7fELF\x00\x01\x02")
        message = await sandbox.fails("file_read", "execution_error", path="b.bin")
        assert "binary file" in message
        assert "file_list" in message

    async def test_too_large(self, sandbox: Sandbox) -> None:
        with (sandbox.ws / "big.txt").open("wb") as f:
            f.truncate(9 << 20)
        message = await sandbox.fails("file_read", "execution_error", path="big.txt")
        assert "too large" in message

    async def test_outside_the_mounts_is_denied_before_the_guest_runs(
        self, sandbox: Sandbox
    ) -> None:
        message = await sandbox.fails("file_read", "permission_denied", path="/etc/passwd")
        assert "/workspace" in message


class TestFileList:
    async def test_lists_types_and_sizes(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "sub").mkdir()
        (sandbox.ws / "sub" / "x.txt").write_text("12345")
        (sandbox.ws / "a.txt").write_text("abc")
        flat = await sandbox.ok("file_list", path="/workspace")
        assert flat.splitlines() == ["file\t3\ta.txt", "dir\t-\tsub/"]
        deep = await sandbox.ok("file_list", path="/workspace", depth=2)
        assert "file\t5\tsub/x.txt" in deep.splitlines()

    async def test_empty_directory(self, sandbox: Sandbox) -> None:
        assert "is empty" in await sandbox.ok("file_list", path="/workspace")

    async def test_not_found(self, sandbox: Sandbox) -> None:
        message = await sandbox.fails("file_list", "execution_error", path="nope")
        assert "does not exist" in message


class TestFileSearch:
    async def test_finds_literal_hits_with_line_numbers(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "src").mkdir()
        (sandbox.ws / "src" / "a.py").write_text("x = 1\nneedle here\ny\nanother needle\n")
        (sandbox.ws / "b.txt").write_text("needle\n")
        (sandbox.ws / "c.bin").write_bytes(b"needle\x00")
        out = await sandbox.ok("file_search", path="/workspace", query="needle")
        assert sorted(out.splitlines()) == [
            "/workspace/b.txt:1:needle",
            "/workspace/src/a.py:2:needle here",
            "/workspace/src/a.py:4:another needle",
        ]

    async def test_glob_case_wildcard_and_max(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.py").write_text("Alpha\nbeta\n")
        (sandbox.ws / "a.txt").write_text("alpha\n")
        out = await sandbox.ok(
            "file_search", path="/workspace", query="alpha", glob="*.py", ignore_case=True
        )
        assert out.splitlines() == ["/workspace/a.py:1:Alpha"]
        out = await sandbox.ok("file_search", path="/workspace", query="b?t*", mode="wildcard")
        assert out.splitlines() == ["/workspace/a.py:2:beta"]
        (sandbox.ws / "many.txt").write_text("hit\n" * 50)
        out = await sandbox.ok("file_search", path="/workspace", query="hit", max_results=3)
        assert out.splitlines()[:3] == [f"/workspace/many.txt:{i}:hit" for i in (1, 2, 3)]
        assert "stopped at max_results=3" in out

    async def test_no_match(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("x\n")
        assert "no matches in 1 files" in await sandbox.ok(
            "file_search", path="/workspace", query="zzz"
        )


class TestFileWrite:
    async def test_overwrite_append_and_parents(self, sandbox: Sandbox) -> None:
        out = await sandbox.ok(
            "file_write", path="new/deep/f.txt", content="ab", create_parents=True
        )
        assert out == "wrote 2 bytes to /workspace/new/deep/f.txt"
        await sandbox.ok("file_write", path="new/deep/f.txt", content="cd", mode="append")
        assert (sandbox.ws / "new" / "deep" / "f.txt").read_text() == "abcd"
        await sandbox.ok("file_write", path="new/deep/f.txt", content="é")
        assert (sandbox.ws / "new" / "deep" / "f.txt").read_text() == "é"

    async def test_create_refuses_an_existing_file(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "f.txt").write_text("keep")
        message = await sandbox.fails(
            "file_write", "execution_error", path="f.txt", content="x", mode="create"
        )
        assert "already exists" in message
        assert (sandbox.ws / "f.txt").read_text() == "keep"

    async def test_missing_parent_says_how(self, sandbox: Sandbox) -> None:
        message = await sandbox.fails("file_write", "execution_error", path="no/f.txt", content="")
        assert "create_parents" in message

    async def test_read_only_mount_is_refused(self, sandbox: Sandbox) -> None:
        message = await sandbox.fails("file_write", "permission_denied", path="/docs/x", content="")
        assert "/docs" in message
        assert not (sandbox.docs / "x").exists()


class TestFileEdit:
    async def test_replaces_a_unique_snippet(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "e.py").write_text("a = 1\nb = 2\n")
        out = await sandbox.ok("file_edit", path="e.py", old_string="b = 2", new_string="b = 3")
        assert out == "replaced 1 occurrence in /workspace/e.py"
        assert (sandbox.ws / "e.py").read_text() == "a = 1\nb = 3\n"

    async def test_ambiguous_snippet_says_how_many(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "e.py").write_text("x\nx\nx\n")
        message = await sandbox.fails(
            "file_edit", "execution_error", path="e.py", old_string="x", new_string="y"
        )
        assert "occurs 3 times" in message
        assert (sandbox.ws / "e.py").read_text() == "x\nx\nx\n"
        await sandbox.ok("file_edit", path="e.py", old_string="x", new_string="y", replace_all=True)
        assert (sandbox.ws / "e.py").read_text() == "y\ny\ny\n"

    async def test_missing_snippet(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "e.py").write_text("abc")
        message = await sandbox.fails(
            "file_edit", "execution_error", path="e.py", old_string="zz", new_string="y"
        )
        assert "not found" in message

    async def test_binary_and_missing_file(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "b.bin").write_bytes(b"a\x00b")
        message = await sandbox.fails(
            "file_edit", "execution_error", path="b.bin", old_string="a", new_string="c"
        )
        assert "binary" in message
        message = await sandbox.fails(
            "file_edit", "execution_error", path="none.txt", old_string="a", new_string="c"
        )
        assert "does not exist" in message


class TestFileDelete:
    async def test_file_and_empty_directory(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "f").write_text("x")
        (sandbox.ws / "d").mkdir()
        assert await sandbox.ok("file_delete", path="f") == "deleted file /workspace/f"
        assert "deleted empty directory" in await sandbox.ok("file_delete", path="d")
        assert os.listdir(sandbox.ws) == []

    async def test_non_empty_directory_needs_recursive(self, sandbox: Sandbox) -> None:
        tree = sandbox.ws / "t" / "u"
        tree.mkdir(parents=True)
        for i in range(5):
            (tree / f"{i}.txt").write_text("x")
        message = await sandbox.fails("file_delete", "execution_error", path="t")
        assert "recursive=true" in message
        assert tree.exists()
        out = await sandbox.ok("file_delete", path="t", recursive=True)
        assert out == "deleted directory /workspace/t (7 entries)"
        assert not (sandbox.ws / "t").exists()

    async def test_not_found_read_only_and_mount_root(self, sandbox: Sandbox) -> None:
        assert "does not exist" in await sandbox.fails("file_delete", "execution_error", path="x")
        (sandbox.docs / "keep").write_text("x")
        await sandbox.fails("file_delete", "permission_denied", path="/docs/keep")
        assert (sandbox.docs / "keep").exists()
        await sandbox.fails("file_delete", "permission_denied", path="/workspace", recursive=True)


class TestAttachmentSave:
    async def test_saves_into_shared(self, sandbox: Sandbox) -> None:
        data = bytes(range(256)) * 3
        ctx = ToolExecutionContext(attachments=(Attachment("pic.png", "image/png", data),))
        result = await sandbox.runtime.execute(
            "attachment_save", {"attachment": "pic.png", "path": "/shared/pic.png"}, ctx
        )
        assert not result.is_error, result.output_text
        assert (sandbox.shared / "pic.png").read_bytes() == data
        again = await sandbox.runtime.execute(
            "attachment_save", {"attachment": "pic.png", "path": "/shared/pic.png"}, ctx
        )
        assert again.error is not None
        assert "already exists" in again.error.message

    async def test_unknown_attachment_and_wrong_place(self, sandbox: Sandbox) -> None:
        message = await sandbox.fails(
            "attachment_save", "execution_error", attachment="x", path="/shared/x"
        )
        assert "no attachment named x" in message
        message = await sandbox.fails(
            "attachment_save", "permission_denied", attachment="x", path="/workspace/x"
        )
        assert "/shared or /tmp" in message
        assert "x" not in os.listdir(sandbox.ws)


class TestSymlinks:
    @pytest.fixture
    def outside(self, sandbox: Sandbox) -> Path:
        out = sandbox.ws.parent / "outside"
        (out / "dir").mkdir(parents=True)
        (out / "secret").write_text("SECRET")
        (out / "dir/inner").write_text("INNER")
        return out

    @pytest.mark.parametrize("spelling", ["relative", "absolute"])
    async def test_a_link_pointing_outside_can_be_deleted(
        self, sandbox: Sandbox, outside: Path, spelling: str
    ) -> None:
        for name, target in (("to_file", "secret"), ("to_dir", "dir")):
            link = sandbox.ws / name
            link.symlink_to(f"../outside/{target}" if spelling == "relative" else outside / target)
            await sandbox.fails("file_read", "permission_denied", path=f"{name}/inner")
            out = await sandbox.ok("file_delete", path=name, recursive=True)
            assert out == f"deleted symbolic link /workspace/{name}"
            assert not link.is_symlink()
        assert (outside / "secret").read_text() == "SECRET"
        assert (outside / "dir/inner").read_text() == "INNER"

    async def test_a_link_inside_is_deleted_not_its_target(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "d").mkdir()
        (sandbox.ws / "d/f.txt").write_text("kept")
        (sandbox.ws / "link_d").symlink_to("d")
        (sandbox.ws / "link_f").symlink_to("d/f.txt")
        (sandbox.ws / "dangling").symlink_to("nowhere")
        for name in ("link_d", "link_f", "dangling"):
            assert (
                await sandbox.ok("file_delete", path=name)
                == f"deleted symbolic link /workspace/{name}"
            )
        assert sorted(os.listdir(sandbox.ws)) == ["d"]
        assert (sandbox.ws / "d/f.txt").read_text() == "kept"

    async def test_absolute_and_relative_links_into_another_mount_agree(
        self, sandbox: Sandbox
    ) -> None:
        (sandbox.docs / "readme").write_text("docs")
        (sandbox.ws / "rel").symlink_to("../docs")
        (sandbox.ws / "abs").symlink_to(sandbox.docs)
        rel = await sandbox.fails("file_read", "permission_denied", path="rel/readme")
        absolute = await sandbox.fails("file_read", "permission_denied", path="abs/readme")
        assert "climbs out of mount /workspace" in rel
        assert "symlink with an absolute target" in absolute
        assert await sandbox.ok("file_read", path="/docs/readme") == "docs"


class TestMessages:
    @pytest.mark.parametrize(
        ("tool", "args", "says"),
        [
            ("file_read", {}, "cannot read: /workspace/t is not readable here"),
            ("file_list", {}, "cannot list: /workspace/t is not readable here"),
            ("file_search", {"query": "x"}, "cannot search: /workspace/t is not readable here"),
        ],
    )
    async def test_a_read_refused_inside_the_guest_says_not_readable(
        self, sandbox: Sandbox, tool: str, args: dict[str, object], says: str
    ) -> None:
        # After the check, "t" becomes a link WASI will not follow (an absolute target).
        (sandbox.ws / "t").write_text("x")

        def swap() -> None:
            (sandbox.ws / "t").unlink()
            (sandbox.ws / "t").symlink_to(sandbox.ws.parent / "docs")

        sandbox.runtime.pipeline.checks.append(Plant(swap))
        message = await sandbox.fails(tool, "permission_denied", path="t", **args)
        assert message.startswith(says), message
        assert "writable" not in message

    @pytest.mark.parametrize(
        ("path", "says"),
        [
            ("a\x00b", "contains a NUL byte"),
            ("a" * 256, "has a component longer than 255 bytes"),
            ("x/" + "é" * 128, "has a component longer than 255 bytes"),
            ("a/" * 2049, "is longer than 4096 bytes"),
        ],
    )
    @pytest.mark.parametrize("tool", ["file_read", "file_write", "file_delete", "file_list"])
    async def test_a_path_of_the_wrong_shape_is_a_validation_error(
        self, sandbox: Sandbox, tool: str, path: str, says: str
    ) -> None:
        args = {"content": "x"} if tool == "file_write" else {}
        result = await sandbox.call(tool, path=path, **args)
        assert result.error is not None
        assert result.error.kind.value == "validation_error", result.error.message
        assert result.error.field == "path"
        assert says in result.error.message
        assert result.error.message.startswith(f"{tool}: path: ")
