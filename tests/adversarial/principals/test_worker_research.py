"""A worker session researches and only reads, through ``Runtime.from_config`` + ``execute``.

A worker may search its user's notes (never another user's), search the web and fetch
pages -- a network read is a ``GET``/``HEAD`` without a body, through the egress policy --
and is refused everything that writes or sends: a note, a file, a schedule, a message, an
``http_request`` of any method, a shell command. Past the gate its guests hold only the
read-only forms of the ``memory`` and ``http`` bindings, so a write still cannot happen.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import (
    Runtime,
    SessionKind,
    ToolError,
    ToolExecutionContext,
    ToolResult,
)

from ...host_bindings.servers import NASTY_HTML, Server, serving
from ._cast import ADA, ADA_WORKER, BOB, config_with_agents

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

LEAD_WORKER = ADA.child(SessionKind.WORKER, agent_id="lead", session_id="s1/research")
"""A worker of the unrestricted agent: every tool is registered for it."""
BOB_WORKER = BOB.child(SessionKind.WORKER, agent_id="reviewer", session_id="s1/reviewer")
SEARXNG = {"results": [{"title": "Herons", "url": "https://birds.example/heron", "content": "x"}]}


def _page(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("Content-Length", str(len(NASTY_HTML)))
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(NASTY_HTML)


def _search(h: BaseHTTPRequestHandler) -> None:
    body = json.dumps(SEARXNG).encode()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


@dataclass
class Box:
    runtime: Runtime
    server: Server
    workspace: Path

    async def call(self, ctx: ToolExecutionContext, tool: str, **args: Any) -> ToolResult:
        return await self.runtime.execute(tool, args, ctx)


@pytest.fixture
def server() -> Iterator[Server]:
    with serving({"/page.html": _page, "/search": _search, "/api": _page}) as running:
        yield running


@pytest.fixture
async def box(tmp_path: Path, server: Server) -> AsyncIterator[Box]:
    (tmp_path / "workspace").mkdir()
    body = f"""
[egress]
private_exceptions = ["127.0.0.1"]

[egress.web_search]
provider = "searxng"
base_url = "{server.url}/"

[state]
url = "data/state.db"
"""
    async with Runtime.from_config(config_with_agents(tmp_path, body)) as runtime:
        yield Box(runtime, server, tmp_path / "workspace")


def text_of(result: ToolResult) -> str:
    assert not result.is_error, result.envelope()
    return result.output_text


def notes_found(result: ToolResult) -> list[dict[str, Any]]:
    """The hits of a ``memory_search`` (its first line; a keyword-only search adds one)."""
    hits: list[dict[str, Any]] = json.loads(text_of(result).split("\n", 1)[0])
    return hits


def refused(result: ToolResult, *also: str) -> None:
    """``result`` is a refusal (or one of the error types ``also``)."""
    assert result.error is not None, result.envelope()
    assert result.error.kind.value in {"permission_denied", *also}, result.envelope()


class TestAWorkerResearches:
    async def test_it_searches_its_own_users_notes_only(self, box: Box) -> None:
        text_of(await box.call(ADA, "memory_save", content="the heron nests by the weir"))
        text_of(await box.call(BOB, "memory_save", content="bob saw a heron at the lock"))
        for worker, own in ((ADA_WORKER, "weir"), (LEAD_WORKER, "weir"), (BOB_WORKER, "lock")):
            hits = notes_found(await box.call(worker, "memory_search", query="heron"))
            assert [own in hit["text"] for hit in hits] == [True], (worker.principal, hits)

    async def test_it_searches_the_web(self, box: Box) -> None:
        found = text_of(await box.call(LEAD_WORKER, "web_search", query="heron"))
        assert "Herons" in found
        assert "https://birds.example/heron" in found
        assert box.server.hits == ["/search?q=heron&format=json"]

    async def test_it_fetches_a_page(self, box: Box) -> None:
        page = text_of(await box.call(LEAD_WORKER, "web_fetch", url=f"{box.server.url}/page.html"))
        assert "Hello" in page
        assert "alert" not in page


class TestAWorkerNeverWritesOrSends:
    @pytest.mark.parametrize(
        ("tool", "args"),
        [
            ("memory_save", {"content": "a worker's note"}),
            ("memory_update", {"note_id": "note-1", "content": "x"}),
            ("memory_delete", {"note_id": "note-1"}),
            ("scratchpad_write", {"items": ["x"]}),
            ("schedule_create", {"goal": "x", "cadence_type": "once", "cadence_value": "1h"}),
            ("file_write", {"path": "worker.txt", "content": "x"}),
            ("file_edit", {"path": "kept.txt", "old_string": "kept", "new_string": "gone"}),
            ("file_delete", {"path": "kept.txt"}),
            ("send_message", {"text": "hello"}),
            ("http_request", {"url": "/api", "method": "POST", "body": "x"}),
            ("http_request", {"url": "/api"}),
            ("shell_exec", {"command": "echo x > worker.txt"}),
        ],
    )
    async def test_it_is_refused(self, box: Box, tool: str, args: dict[str, Any]) -> None:
        (box.workspace / "kept.txt").write_text("kept")
        if tool == "http_request":
            args = {**args, "url": box.server.url + args["url"]}
        refused(await box.call(LEAD_WORKER, tool, **args))
        # The restricted agent's worker: a tool outside its profile does not exist for it.
        refused(await box.call(ADA_WORKER, tool, **args), "not_found")
        assert box.server.hits == []
        assert sorted(p.name for p in box.workspace.iterdir()) == ["kept.txt"]
        assert (box.workspace / "kept.txt").read_text() == "kept"
        assert notes_found(await box.call(ADA, "memory_search", query="worker's note")) == []

    async def test_past_the_gate_its_guests_hold_only_read_handles(self, box: Box) -> None:
        # The tools themselves, called as a worker without the pipeline's gate: the http
        # binding a worker's guest gets sends reads only, the memory binding searches only.
        url = f"{box.server.url}/api"
        post = box.runtime.registry.get("http_request")
        outcome = await _outcome(post.execute({"url": url, "method": "POST"}, LEAD_WORKER))
        assert outcome[0] == "permission_denied", outcome
        assert "GET or HEAD" in outcome[1]
        assert box.server.hits == []
        read = await _outcome(post.execute({"url": url, "method": "HEAD"}, LEAD_WORKER))
        assert read[0] is None, read
        assert box.server.hits == ["/api"]
        save = box.runtime.registry.get("memory_save")
        outcome = await _outcome(save.execute({"content": "a worker's note"}, LEAD_WORKER))
        assert outcome[0] == "permission_denied", outcome
        assert "worker session" in outcome[1]
        assert notes_found(await box.call(ADA, "memory_search", query="worker's note")) == []


async def _outcome(work: Any) -> tuple[str | None, str]:
    """The error type (``None``: success) and the message of a tool run directly."""
    try:
        result: ToolResult = await work
    except ToolError as exc:
        return exc.kind.value, exc.message
    if result.error is None:
        return None, result.output_text
    return result.error.kind.value, result.error.message
