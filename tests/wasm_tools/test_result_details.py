"""Each file tool's result for two audiences: ``details`` a caller decides on, a ``display``
line for a person, and the ``artifacts`` the call created, changed or deleted."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolcage.runtime import (
    Artifact,
    ArtifactAction,
    Attachment,
    Runtime,
    ToolExecutionContext,
    ToolResult,
)
from toolcage.wasm_tools.build import build_tool

from .conftest import Sandbox

pytestmark = pytest.mark.anyio

CREATED, MODIFIED, DELETED = ArtifactAction.CREATED, ArtifactAction.MODIFIED, ArtifactAction.DELETED


@pytest.fixture(autouse=True)
def no_malformed_documents(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A built-in guest whose result document has a malformed member fails its test."""
    with caplog.at_level(logging.WARNING, logger="toolcage.wasm"):
        yield
    assert not [r.getMessage() for r in caplog.records if r.name == "toolcage.wasm"]


def ok(result: ToolResult) -> ToolResult:
    assert not result.is_error, result.output_text
    return result


class TestFileRead:
    async def test_a_whole_file(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "notes.txt").write_text("one\ntwo\nthree\n")
        result = ok(await sandbox.call("file_read", path="/workspace/notes.txt"))
        assert result.details == {
            "path": "/workspace/notes.txt",
            "bytes": 14,
            "lines": 3,
            "offset": 0,
            "lines_returned": 3,
            "truncated": False,
        }
        assert result.display == "Read notes.txt (3 lines)"
        assert result.artifacts == ()

    async def test_a_window_of_lines(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "notes.txt").write_text("one\ntwo\nthree\nfour")
        result = ok(await sandbox.call("file_read", path="/workspace/notes.txt", offset=1, limit=2))
        assert result.output_text == "two\nthree\n"
        assert result.details["lines"] == 4  # the last line has no newline, and counts
        assert (result.details["lines_returned"], result.details["truncated"]) == (2, True)
        assert result.display == "Read lines 2-3 of notes.txt (4 lines)"

    async def test_an_empty_file(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "empty.txt").write_text("")
        result = ok(await sandbox.call("file_read", path="/workspace/empty.txt"))
        assert (result.details["bytes"], result.details["lines"]) == (0, 0)
        assert result.display == "Read empty.txt (0 lines)"

    async def test_a_failed_read_has_no_details(self, sandbox: Sandbox) -> None:
        result = await sandbox.call("file_read", path="/workspace/missing.txt")
        assert result.is_error
        assert (result.details, result.display, result.artifacts) == (None, None, ())


class TestFileList:
    async def test_counts_by_type(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("a")
        (sandbox.ws / "b.txt").write_text("b")
        (sandbox.ws / "sub").mkdir()
        (sandbox.ws / "link").symlink_to("a.txt")
        result = ok(await sandbox.call("file_list", path="/workspace"))
        assert result.details == {
            "path": "/workspace",
            "entries": 4,
            "files": 2,
            "dirs": 1,
            "links": 1,
            "truncated": False,
            "unlisted": 0,
        }
        assert result.display == "Listed workspace (4 entries: 2 files, 1 dir)"


class TestFileSearch:
    async def test_matches_and_the_files_they_are_in(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("needle\nhay\nneedle again\n")
        (sandbox.ws / "sub").mkdir()
        (sandbox.ws / "sub" / "b.txt").write_text("a needle\n")
        (sandbox.ws / "c.txt").write_text("nothing\n")
        result = ok(await sandbox.call("file_search", path="/workspace", query="needle"))
        assert result.details == {
            "path": "/workspace",
            "matches": 3,
            "files": ["/workspace/a.txt", "/workspace/sub/b.txt"],
            "files_matched": 2,
            "files_searched": 3,
            "truncated": False,
        }
        assert result.display == "Found 3 matches in 2 files"

    async def test_stopping_at_max_results_is_truncated(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("x\n" * 10)
        args = {"path": "/workspace", "query": "x", "max_results": 4}
        result = ok(await sandbox.call("file_search", **args))
        assert (result.details["matches"], result.details["truncated"]) == (4, True)
        assert result.display == "Found 4 matches in 1 file (stopped at max_results)"

    async def test_no_match(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("hay\n")
        result = ok(await sandbox.call("file_search", path="/workspace", query="needle"))
        assert (result.details["matches"], result.details["files"]) == (0, [])
        assert result.display == "No matches in 1 file"

    async def test_a_hit_on_a_line_that_is_not_utf8_keeps_the_result_whole(
        self, sandbox: Sandbox
    ) -> None:
        (sandbox.ws / "latin.txt").write_bytes(b"caf\xe9 needle\n")
        result = ok(await sandbox.call("file_search", path="/workspace", query="needle"))
        assert result.output_text == "/workspace/latin.txt:1:caf\ufffd needle\n"
        assert result.details["matches"] == 1

    async def test_the_files_named_are_capped_and_counted(self, sandbox: Sandbox) -> None:
        for n in range(105):
            (sandbox.ws / f"f{n:03d}.txt").write_text("needle\n")
        args = {"path": "/workspace", "query": "needle", "max_results": 200}
        result = ok(await sandbox.call("file_search", **args))
        assert len(result.details["files"]) == 100
        assert result.details["files_matched"] == 105


class TestFileWrite:
    async def test_create_then_overwrite_then_append(self, sandbox: Sandbox) -> None:
        path = "/workspace/notes.txt"
        created = ok(await sandbox.call("file_write", path=path, content="x" * 1300))
        assert created.details == {
            "path": path,
            "bytes": 1300,
            "size": 1300,
            "mode": "overwrite",
            "created": True,
        }
        assert created.artifacts == (Artifact("file", path, CREATED),)
        assert created.display == "Created notes.txt (1.3 KB)"
        replaced = ok(await sandbox.call("file_write", path=path, content="hello"))
        assert (replaced.details["created"], replaced.details["size"]) == (False, 5)
        assert replaced.artifacts == (Artifact("file", path, MODIFIED),)
        assert replaced.display == "Wrote notes.txt (5 B)"
        appended = ok(await sandbox.call("file_write", path=path, content="!!", mode="append"))
        assert (appended.details["bytes"], appended.details["size"]) == (2, 7)
        assert appended.details["mode"] == "append"
        assert appended.display == "Appended 2 B to notes.txt"

    async def test_the_envelope_carries_details_and_artifacts_but_not_the_display(
        self, sandbox: Sandbox
    ) -> None:
        result = ok(await sandbox.call("file_write", path="/workspace/a.txt", content="hi"))
        envelope = result.envelope()
        assert list(envelope) == ["status", "result", "details", "artifacts", "duration_ms"]
        assert envelope["artifacts"] == [
            {"kind": "file", "ref": "/workspace/a.txt", "action": "created"}
        ]
        assert "display" not in envelope


class TestFileEditAndDelete:
    async def test_edit(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("one one two")
        args = {"old_string": "one", "new_string": "three", "replace_all": True}
        result = ok(await sandbox.call("file_edit", path="/workspace/a.txt", **args))
        assert result.details == {
            "path": "/workspace/a.txt",
            "replacements": 2,
            "bytes": 15,
            "previous_bytes": 11,
        }
        assert result.artifacts == (Artifact("file", "/workspace/a.txt", MODIFIED),)
        assert result.display == "Edited a.txt (2 replacements)"

    async def test_delete_a_file_and_a_tree(self, sandbox: Sandbox) -> None:
        (sandbox.ws / "a.txt").write_text("a")
        (sandbox.ws / "tree" / "sub").mkdir(parents=True)
        (sandbox.ws / "tree" / "sub" / "b.txt").write_text("b")
        file = ok(await sandbox.call("file_delete", path="/workspace/a.txt"))
        assert file.details == {"path": "/workspace/a.txt", "type": "file", "entries": 1}
        assert file.artifacts == (Artifact("file", "/workspace/a.txt", DELETED),)
        assert file.display == "Deleted file a.txt"
        tree = ok(await sandbox.call("file_delete", path="/workspace/tree", recursive=True))
        assert tree.details == {"path": "/workspace/tree", "type": "directory", "entries": 3}
        assert tree.artifacts == (Artifact("file", "/workspace/tree", DELETED),)
        assert tree.display == "Deleted directory tree (3 entries)"


class TestOtherGuests:
    async def test_attachment_save(self, sandbox: Sandbox) -> None:
        ctx = ToolExecutionContext(attachments=(Attachment("pic.png", "image/png", b"P" * 10),))
        args = {"attachment": "pic.png", "path": "/shared/pic.png"}
        result = ok(await sandbox.runtime.execute("attachment_save", args, ctx))
        assert result.details == {
            "path": "/shared/pic.png",
            "attachment": "pic.png",
            "bytes": 10,
            "created": True,
        }
        assert result.artifacts == (Artifact("file", "/shared/pic.png", CREATED),)
        assert result.display == "Saved pic.png to /shared/pic.png (10 B)"
        again = await sandbox.runtime.execute("attachment_save", {**args, "overwrite": True}, ctx)
        assert ok(again).artifacts == (Artifact("file", "/shared/pic.png", MODIFIED),)

    async def test_get_current_time(self, sandbox: Sandbox) -> None:
        result = ok(await sandbox.call("get_current_time", timezone="Asia/Tokyo"))
        assert set(result.details) == {"timezone", "iso8601", "unix", "utc_offset"}
        assert result.details["utc_offset"] == "+09:00"
        assert isinstance(result.details["unix"], int)
        assert result.display == f"Current time in Asia/Tokyo: {result.details['iso8601']}"

    async def test_names_in_details_and_artifacts_are_shown_escaped(self, sandbox: Sandbox) -> None:
        result = ok(await sandbox.call("file_write", path="/workspace/a\tb.txt", content="x"))
        assert result.details["path"] == "/workspace/a\\x09b.txt"
        assert result.artifacts[0].ref == "/workspace/a\\x09b.txt"
        assert result.display == "Created a\\x09b.txt (1 B)"


class TestSdkCalls:
    """An operator's guest built with the SDK sets each part with the SDK's calls."""

    @pytest.fixture
    def config(self, tmp_path: Path) -> Path:
        tools = tmp_path / "tools"
        tools.mkdir()
        build_tool(Path(__file__).parent / "sdk_guests" / "structured.c", tools)
        declaration = {
            "name": "structured",
            "description": "Answer with every structured part.",
            "parameters": {"type": "object", "properties": {"fail": {"type": "boolean"}}},
            "safety_tier": "read_only",
            "timeout": 10,
        }
        (tools / "structured.json").write_text(json.dumps(declaration))
        (tmp_path / "toolcage.toml").write_text('[guest_tools]\ndirs = ["tools"]\n')
        return tmp_path / "toolcage.toml"

    async def test_every_part_arrives_valid(self, config: Path) -> None:
        async with Runtime.from_config(config) as runtime:
            result = ok(await runtime.execute("structured", {}))
        assert result.output_text == "ok"
        assert result.details == {"kept": True, "n": -42, "list": [1, "two"], "text": "caf\ufffd"}
        assert result.display == "1.5 KB in two lines"
        assert result.artifacts == (Artifact("file", "/data/a\\x0ab", CREATED),)

    async def test_a_failure_drops_them(self, config: Path) -> None:
        async with Runtime.from_config(config) as runtime:
            result = await runtime.execute("structured", {"fail": True})
        assert result.is_error
        assert result.output_text == "failed after all"
        assert (result.details, result.display, result.artifacts) == (None, None, ())
