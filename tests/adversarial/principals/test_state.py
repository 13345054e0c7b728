"""The state tools keep each principal's objects its own, on both store backends.

Notes belong to a user (any of the user's agents with the memory tools reads them), a
scratchpad to a user's session, vault items to the agents granted them. Another user's
object is answered exactly like a missing one, and ids shaped like SQL or search syntax
are ordinary ids.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult

from ...host_bindings.store.libsql_server import LibsqlServer
from ._cast import (
    ADA,
    ADA_BRANCH,
    ADA_REVIEWER,
    ADA_WORKER,
    BOB,
    config_with_agents,
    context,
)

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

TOKEN = "principals-token"  # noqa: S105  (the test server's own)

STATE = """
[state.embedder]
kind = "hash"
dimensions = 32

[state.vault]
dir = "vault"
grants = {{ lead = ["*"], reviewer = [] }}
"""


@pytest.fixture(params=["embedded", "libsql"])
def state_section(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """The ``[state]`` section of each backend."""
    if request.param == "embedded":
        yield '[state]\nurl = "data/state.db"\n' + STATE.format()
        return
    monkeypatch.setenv("TC_PRINCIPALS_TOKEN", TOKEN)
    with LibsqlServer(tmp_path / "remote.db", token=TOKEN) as server:
        yield (
            f'[state]\nurl = "{server.url}"\nauth_token_env = "TC_PRINCIPALS_TOKEN"\n'
            + STATE.format()
        )


@pytest.fixture
async def runtime(tmp_path: Path, state_section: str) -> AsyncIterator[Runtime]:
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "api-key").write_text("s3cret-value")
    (tmp_path / "shared").mkdir()
    config = config_with_agents(tmp_path, state_section)
    async with Runtime.from_config(config) as built:
        yield built


async def call(runtime: Runtime, ctx: ToolExecutionContext, tool: str, **args: Any) -> ToolResult:
    return await runtime.execute(tool, args, ctx)


async def ok(runtime: Runtime, ctx: ToolExecutionContext, tool: str, **args: Any) -> Any:
    result = await call(runtime, ctx, tool, **args)
    assert not result.is_error, result.envelope()
    return json.loads(result.output_text.split("\n", 1)[0])


async def error_of(runtime: Runtime, ctx: ToolExecutionContext, tool: str, **args: Any) -> str:
    result = await call(runtime, ctx, tool, **args)
    assert result.error is not None, result.envelope()
    return result.error.kind.value


class TestNotes:
    async def test_another_user_neither_finds_nor_changes_a_note(self, runtime: Runtime) -> None:
        saved = await ok(runtime, ADA, "memory_save", content="the heron nests by the weir")
        assert await ok(runtime, BOB, "memory_search", query="heron weir") == []
        for tool, args in (
            ("memory_update", {"content": "mine now"}),
            ("memory_delete", {}),
        ):
            unknown = await error_of(runtime, BOB, tool, note_id="note-unknown", **args)
            stolen = await error_of(runtime, BOB, tool, note_id=saved["note_id"], **args)
            assert stolen == unknown
        [hit] = await ok(runtime, ADA, "memory_search", query="heron weir")
        assert hit["text"] == "the heron nests by the weir"

    async def test_notes_are_the_users_across_her_agents(self, runtime: Runtime) -> None:
        await ok(runtime, ADA, "memory_save", content="kingfisher seen at dawn")
        [hit] = await ok(runtime, ADA_REVIEWER, "memory_search", query="kingfisher")
        assert hit["text"] == "kingfisher seen at dawn"

    async def test_a_worker_cannot_write_state(self, runtime: Runtime) -> None:
        assert await error_of(runtime, ADA_WORKER, "memory_save", content="x") in {
            "permission_denied",
            "not_found",
        }

    @pytest.mark.parametrize(
        "user",
        ["'; DELETE FROM notes; --", 'x" OR 1=1 --', "heron*", "NEAR(heron weir)", "%", "_"],
    )
    async def test_ids_shaped_like_sql_or_search_syntax_reach_nothing(
        self, runtime: Runtime, user: str
    ) -> None:
        await ok(runtime, ADA, "memory_save", content="heron weir heron")
        hostile = context(user)
        assert await ok(runtime, hostile, "memory_search", query="heron") == []
        await ok(runtime, hostile, "memory_save", content="heron of the hostile id")
        [own] = await ok(runtime, hostile, "memory_search", query="heron")
        assert own["text"] == "heron of the hostile id"
        [hers] = await ok(runtime, ADA, "memory_search", query="heron")
        assert hers["text"] == "heron weir heron"


class TestScratchpads:
    async def test_a_pad_is_one_users_one_session(self, runtime: Runtime) -> None:
        await ok(runtime, ADA, "scratchpad_write", items=["ada's plan"])
        for stranger in (BOB, context("ada", session="s2"), ADA_BRANCH):
            pad = await ok(runtime, stranger, "scratchpad_read")
            assert pad["items"] == [], stranger.principal
        assert (await ok(runtime, ADA, "scratchpad_read"))["items"] == ["ada's plan"]
        await ok(runtime, BOB, "scratchpad_clear")
        assert (await ok(runtime, ADA, "scratchpad_read"))["items"] == ["ada's plan"]


class TestVault:
    async def test_only_a_granted_agent_copies_an_item(self, runtime: Runtime) -> None:
        args = {"item": "api-key", "path": "/shared/key.txt"}
        assert await error_of(runtime, ADA_REVIEWER, "vault_copyto", **args) in {
            "permission_denied",
            "not_found",
        }
        result = await call(runtime, ADA, "vault_copyto", **args)
        assert not result.is_error, result.envelope()
        assert "s3cret-value" not in result.output_text
