"""The state, schedule and media tools' results for two audiences: ``details`` a caller
decides on, a ``display`` line for a person, and the ``artifacts`` each call wrote, through
``Runtime.execute``."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import (
    Artifact,
    ArtifactAction,
    Runtime,
    ToolExecutionContext,
    ToolResult,
)

from .test_schedule_tools import fire
from .test_send_media import PNG, RecordingChannel

pytestmark = pytest.mark.anyio

CONFIG = """
[state]
url = "data/state.db"

[state.vault]
dir = "vault"
max_bytes = 64
grants = { default = ["*"] }
"""
CTX = ToolExecutionContext(user_id="ada", session_id="s1", channel_id="chat-7")


@pytest.fixture(autouse=True)
def no_malformed_documents(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """A built-in guest whose result document has a malformed member fails its test."""
    with caplog.at_level(logging.WARNING, logger="toolcage.wasm"):
        yield
    assert not [r.getMessage() for r in caplog.records if r.name == "toolcage.wasm"]


@dataclass
class Box:
    runtime: Runtime
    root: Path

    async def ok(self, tool: str, **args: Any) -> ToolResult:
        result = await self.runtime.execute(tool, args, CTX)
        assert not result.is_error, result.output_text
        return result


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Box]:
    for name in ("vault", "workspace", "shared"):
        (tmp_path / name).mkdir()
    (tmp_path / "toolcage.toml").write_text(CONFIG)
    channel = RecordingChannel()
    async with Runtime.from_config(tmp_path / "toolcage.toml", channel=channel) as runtime:
        yield Box(runtime, tmp_path)


class TestMemory:
    async def test_each_note_written_is_an_artifact(self, box: Box) -> None:
        saved = await box.ok("memory_save", content="The cat is called Pixel.", tags=["pets"])
        note_id = saved.details["note_id"]
        assert saved.details == {"note_id": json.loads(saved.output_text)["note_id"]}
        assert saved.artifacts == (Artifact("memory", note_id, ArtifactAction.CREATED),)
        assert saved.display == f"Saved note {note_id}"
        updated = await box.ok("memory_update", note_id=note_id, content="Pixel is a cat.")
        assert updated.artifacts == (Artifact("memory", note_id, ArtifactAction.MODIFIED),)
        found = await box.ok("memory_search", query="Pixel")
        assert found.details == {
            "results": 1,
            "notes": 1,
            "note_ids": [note_id],
            "keyword_only": True,
        }
        assert found.display == "Found 1 result (1 note)"
        assert found.artifacts == ()
        deleted = await box.ok("memory_delete", note_id=note_id)
        assert deleted.artifacts == (Artifact("memory", note_id, ArtifactAction.DELETED),)
        assert deleted.display == f"Deleted note {note_id}"


class TestScratchpadAndVault:
    async def test_scratchpad(self, box: Box) -> None:
        wrote = await box.ok("scratchpad_write", items=["plan", "do"])
        assert (wrote.details, wrote.display) == (
            {"item_count": 2},
            "Wrote the scratchpad (2 items)",
        )
        read = await box.ok("scratchpad_read")
        assert read.details["item_count"] == 2
        assert isinstance(read.details["updated_at"], str)
        assert read.display == "Read the scratchpad (2 items)"
        cleared = await box.ok("scratchpad_clear")
        assert (cleared.details, cleared.display) == ({"cleared": True}, "Cleared the scratchpad")

    async def test_vault_copy_is_a_file_created_then_modified(self, box: Box) -> None:
        (box.root / "vault" / "api-key").write_bytes(b"s3cret-value")
        args = {"item": "api-key", "path": "/shared/key.txt"}
        first = await box.ok("vault_copyto", **args)
        assert first.details == {
            "item": "api-key",
            "path": "/shared/key.txt",
            "bytes": 12,
            "created": True,
        }
        assert first.artifacts == (Artifact("file", "/shared/key.txt", ArtifactAction.CREATED),)
        assert first.display == "Copied vault item api-key to /shared/key.txt (12 B)"
        again = await box.ok("vault_copyto", **args, overwrite=True)
        assert again.details["created"] is False
        assert again.artifacts == (Artifact("file", "/shared/key.txt", ArtifactAction.MODIFIED),)


class TestSchedules:
    async def test_a_schedule_from_creation_to_deletion(self, box: Box) -> None:
        made = await box.ok(
            "schedule_create",
            goal="Count.",
            name="counter",
            cadence_type="interval",
            cadence_value="60",
        )
        sid = made.details["schedule_id"]
        answer = json.loads(made.output_text)
        assert made.details == {
            "schedule_id": answer["schedule_id"],
            "name": "counter",
            "status": "active",
            "next_run_at": answer["next_run_at"],
        }
        assert made.artifacts == (Artifact("schedule", sid, ArtifactAction.CREATED),)
        assert made.display == f"Created schedule counter (next run {answer['next_run_at']})"
        paused = await box.ok("schedule_edit", schedule_id=sid, status="paused")
        assert paused.details["status"] == "paused"
        assert paused.artifacts == (Artifact("schedule", sid, ArtifactAction.MODIFIED),)
        found = await box.ok("schedule_search")
        assert found.details == {"total": 1, "returned": 1, "remaining": 0, "schedule_ids": [sid]}
        assert found.display == "Found 1 schedule (showing 1)"
        gone = await box.ok("schedule_delete", schedule_id=sid)
        assert gone.details == {"schedule_id": sid}
        assert gone.artifacts == (Artifact("schedule", sid, ArtifactAction.DELETED),)

    async def test_runs_and_their_output(self, box: Box) -> None:
        every_minute = {"cadence_type": "interval", "cadence_value": "60"}
        made = await box.ok("schedule_create", goal="Count.", **every_minute)
        sid = made.details["schedule_id"]
        empty = await box.ok("schedule_runs", schedule_id=sid)
        assert empty.details == {"schedule_id": sid, "runs": 0, "run_ids": []}
        at = datetime.fromisoformat(made.details["next_run_at"])
        [run_id] = await fire(box.root, at + timedelta(seconds=1), "x" * 5000)
        runs = await box.ok("schedule_runs", schedule_id=sid)
        assert runs.details == {"schedule_id": sid, "runs": 1, "run_ids": [run_id]}
        assert runs.display == f"Listed 1 run of schedule {sid}"
        page = await box.ok("schedule_run_output", run_id=run_id, max_chars=1000)
        total = len("x" * 5000 + " (Count.)")
        assert page.details == {
            "run_id": run_id,
            "offset": 0,
            "chars": 1000,
            "remaining": total - 1000,
            "total_chars": total,
        }
        assert page.display == (
            f"Read characters 0-1000 of the output of run {run_id} ({total} in all)"
        )


class TestSendMedia:
    async def test_what_was_sent_is_an_artifact(self, box: Box) -> None:
        (box.root / "workspace" / "chart.png").write_bytes(PNG)
        sent = await box.ok("send_media", path="/workspace/chart.png")
        assert sent.details == {
            "path": "/workspace/chart.png",
            "sent": "chart.png",
            "mime_type": "image/png",
            "bytes": len(PNG),
            "channel_id": "chat-7",
        }
        assert sent.artifacts == (Artifact("media", "chart.png", ArtifactAction.SENT),)
        assert sent.display == f"Sent chart.png (image/png, {len(PNG)} B)"
