"""Schemas tell the truth, through ``Runtime.from_config`` + ``execute``.

Every built-in tool is called with its required parameters only: a parameter whose schema
shows a ``default`` must work left out, and none is both required and defaulted. A
result's details agree with what the model received: output the pipeline cut is
``truncated`` in them too.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from toolcage.host_bindings import ChannelMessage
from toolcage.policies._config import parse_config
from toolcage.runtime import Attachment, Runtime, ToolExecutionContext, ToolResult

from ..host_bindings.servers import Server, _send, default_routes, serving
from ..sidecar.conftest import give_to_sandbox, make_workspace

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("python_exec_compiled")]

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
CONTEXT = ToolExecutionContext(
    user_id="ada",
    session_id="s1",
    channel_id="chat",
    attachments=(Attachment("photo.png", "image/png", PNG),),
)
EXPECTED_ERRORS = {
    ("schedule_run_output", "not_found"),  # no schedule has run yet: the run id is unknown
    ("schedule_edit", "validation_error"),  # an edit of nothing: the model is told what to give
}
"""The only calls that may fail; every other one succeeds."""
HANDLE = re.compile(r'tool_output_read with handle "([^"]+)"')


@dataclass
class RecordingChannel:
    sent: list[ChannelMessage] = field(default_factory=list)

    async def send(self, message: ChannelMessage) -> None:
        self.sent.append(message)


def _search(h: BaseHTTPRequestHandler) -> None:
    body = json.dumps({"results": [{"title": "T", "url": "https://a.example/"}]}).encode()
    _send(h, 200, body, "application/json")


@pytest.fixture
def server() -> Iterator[Server]:
    with serving({**default_routes(), "/search": _search}) as running:
        yield running


@dataclass
class Box:
    runtime: Runtime
    workspace: Path
    server: Server

    async def ok(self, tool: str, **args: Any) -> ToolResult:
        result = await self.runtime.execute(tool, args, CONTEXT)
        assert not result.is_error, result.envelope()
        return result


@pytest.fixture
async def box(server: Server) -> AsyncIterator[Box]:
    workspace = make_workspace()
    (workspace / "notes.txt").write_text("the heron nests by the weir\n")
    (workspace / "chart.png").write_bytes(PNG)
    (workspace / "big.txt").write_text("line of a long file\n" * 5000)
    give_to_sandbox(workspace)
    (workspace.parent / "vault").mkdir()
    (workspace.parent / "vault" / "api-key").write_text("s3cret")
    config = parse_config(
        {
            "shell": {"workspace": str(workspace)},
            "approval": {"auto_approve": ["shell_exec", "shell_job"]},
            "egress": {
                "private_exceptions": ["127.0.0.1"],
                "web_search": {"provider": "searxng", "base_url": server.url + "/"},
            },
            "state": {"vault": {"dir": "vault", "grants": {"default": ["*"]}}},
        },
        base_dir=workspace.parent,
    )
    async with Runtime.from_config(config, channel=RecordingChannel()) as runtime:
        yield Box(runtime, workspace, server)


async def required_only(box: Box) -> dict[str, dict[str, Any]]:
    """For each built-in tool, in an order that makes what later ones name, a call with
    sensible values for its required parameters and nothing else."""
    note = json.loads((await box.ok("memory_save", content="a note to change")).output_text)
    created = await box.ok(
        "schedule_create", goal="water the plants", cadence_type="interval", cadence_value="1h"
    )
    schedule = json.loads(created.output_text)
    big = await box.ok("file_read", path="big.txt")
    handle = HANDLE.search(big.output_text)
    assert handle is not None, big.output_text[-300:]
    job = await box.ok("shell_exec", command="echo started", background=True)
    job_id = re.search(r"job[_ ]id\W+([\w-]+)", job.output_text + json.dumps(job.details))
    assert job_id is not None, job.envelope()
    (box.workspace / "gone.txt").write_text("x")
    return {
        "tool_output_read": {"handle": handle.group(1)},
        "shell_exec": {"command": "echo hi"},
        "shell_job": {"job_id": job_id.group(1)},
        "attachment_save": {"attachment": "photo.png", "path": "/shared/photo.png"},
        "file_edit": {"path": "notes.txt", "old_string": "heron", "new_string": "egret"},
        "file_list": {},
        "file_read": {"path": "notes.txt"},
        "file_search": {"query": "egret"},
        "file_write": {"path": "new.txt", "content": "x"},
        "file_delete": {"path": "gone.txt"},
        "get_current_time": {},
        "http_request": {"url": box.server.url + "/ok"},
        "memory_save": {"content": "the heron nests by the weir"},
        "memory_search": {"query": "heron"},
        "memory_update": {"note_id": note["note_id"], "content": "changed"},
        "memory_delete": {"note_id": note["note_id"]},
        "python_exec": {"code": "print(1)"},
        "schedule_create": {"goal": "read", "cadence_type": "interval", "cadence_value": "1d"},
        "schedule_search": {},
        "schedule_edit": {"schedule_id": schedule["schedule_id"]},
        "schedule_runs": {"schedule_id": schedule["schedule_id"]},
        "schedule_run_output": {"run_id": "run-none"},
        "schedule_delete": {"schedule_id": schedule["schedule_id"]},
        "scratchpad_write": {"items": ["a"]},
        "scratchpad_read": {},
        "scratchpad_clear": {},
        "send_media": {"path": "chart.png"},
        "send_message": {"text": "hello"},
        "vault_copyto": {"item": "api-key", "path": "/shared/key.txt"},
        "web_fetch": {"url": box.server.url + "/page.html"},
        "web_search": {"query": "heron"},
    }


class TestDefaults:
    async def test_no_parameter_is_both_required_and_defaulted(self, box: Box) -> None:
        for decl in box.runtime.registry.declarations():
            properties = decl.parameters.get("properties", {})
            for name in decl.parameters.get("required", ()):
                assert "default" not in properties[name], (decl.name, name)

    async def test_every_tool_runs_with_its_required_parameters_only(self, box: Box) -> None:
        calls = await required_only(box)
        declared = {decl.name for decl in box.runtime.registry.declarations()}
        assert set(calls) == declared
        failed = {}
        for tool, args in calls.items():
            result = await box.runtime.execute(tool, args, CONTEXT)
            if result.error is None:
                continue
            if (tool, result.error.kind.value) not in EXPECTED_ERRORS:
                failed[tool] = result.envelope()
        assert failed == {}

    async def test_a_path_left_out_is_its_default(self, box: Box) -> None:
        listed = await box.ok("file_list")
        assert "notes.txt" in listed.output_text
        found = await box.ok("file_search", query="heron")
        assert "notes.txt:1:the heron nests by the weir" in found.output_text


class TestDetailsAgree:
    async def test_output_the_pipeline_cut_is_truncated_in_the_details(self, box: Box) -> None:
        whole = await box.ok("file_read", path="big.txt")
        assert "[output truncated" in whole.output_text
        assert whole.details["truncated"] is True
        window = await box.ok("file_read", path="big.txt", limit=3)
        assert window.details["truncated"] is True  # lines follow the window
        short = await box.ok("file_read", path="notes.txt")
        assert short.details["truncated"] is False
