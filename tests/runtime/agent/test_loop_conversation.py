"""Turns of the agent loop are recorded in the state store, and ``memory_search`` with
``include_conversation`` finds them: a real model server on 127.0.0.1, ``run_turn``, then
the ``memory_search`` guest through ``Runtime.execute``."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import (
    HttpModelClient,
    Runtime,
    StopReason,
    ToolExecutionContext,
    TurnResult,
    run_turn,
)
from toolcage.runtime.providers import UserMessage

from ...host_bindings.store.libsql_server import LibsqlServer
from ..fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply

pytestmark = pytest.mark.anyio

QUESTION = "When does my flight to Lisbon leave?"
ANSWER = "Your flight to Lisbon leaves Friday at 9:40 from gate B12."

STATE = """
[state]
url = "data/state.db"
"""


@asynccontextmanager
async def runtime_of(root: Path, config: str) -> AsyncIterator[Runtime]:
    (root / "toolcage.toml").write_text(config)
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        yield runtime


async def turn(
    runtime: Runtime, user: str = "ada", session: str = "s1", *replies: Reply
) -> TurnResult:
    model = FakeModel("openai_chat", False, list(replies) or [Reply(ANSWER)])
    with FakeModelServer(model) as base_url:
        async with HttpModelClient.for_provider(
            "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
        ) as client:
            return await run_turn(
                client,
                runtime,
                [UserMessage(QUESTION)],
                context=ToolExecutionContext(user_id=user, session_id=session),
            )


async def search(
    runtime: Runtime, user: str = "ada", session: str = "s2", **args: Any
) -> list[dict[str, Any]]:
    ctx = ToolExecutionContext(user_id=user, session_id=session)
    result = await runtime.execute("memory_search", args, ctx)
    assert not result.is_error, result.output_text
    found: list[dict[str, Any]] = json.loads(result.output_text.split("\n", 1)[0])
    return found


async def test_a_turn_is_found_with_include_conversation_only(tmp_path: Path) -> None:
    async with runtime_of(tmp_path, STATE) as runtime:
        done = await turn(runtime)
        assert done.stop is StopReason.COMPLETED
        assert done.text == ANSWER
        hits = await search(runtime, query="Lisbon flight gate", include_conversation=True)
        assert [(hit["source"], hit["text"]) for hit in hits] == [
            ("conversation", ANSWER),
            ("conversation", QUESTION),
        ]
        for hit in hits:
            assert hit["note_id"] is None
            assert hit["session_id"] == "s1"
            assert hit["tags"] == []
        assert [hit["role"] for hit in hits] == ["assistant", "user"]
        assert await search(runtime, query="Lisbon flight gate") == []
        assert await search(runtime, query="Lisbon flight gate", include_conversation=False) == []


async def test_a_turn_is_recorded_on_a_libsql_server(tmp_path: Path) -> None:
    with LibsqlServer(tmp_path / "remote.db", token="remote-token") as server:  # noqa: S106
        config = f'[state]\nurl = "{server.url}"\nauth_token = "remote-token"\n'
        async with runtime_of(tmp_path, config) as runtime:
            await turn(runtime, "ada", "s1")
            hits = await search(runtime, query="Lisbon gate", include_conversation=True)
            assert [hit["text"] for hit in hits] == [ANSWER, QUESTION]
            assert await search(runtime, "bob", query="Lisbon", include_conversation=True) == []
            assert await search(runtime, query="Lisbon gate") == []


async def test_with_an_embedder_turns_are_ranked_by_vector_too(tmp_path: Path) -> None:
    config = STATE + '\n[state.embedder]\nkind = "hash"\ndimensions = 64\n'
    async with runtime_of(tmp_path, config) as runtime:
        await turn(runtime)
        hits = await search(runtime, query="Lisbon gate", include_conversation=True)
        assert [hit["text"] for hit in hits] == [ANSWER, QUESTION]
        keyword_only_best = 1 / 61  # the fused score of the first keyword match alone
        assert all(hit["score"] > keyword_only_best for hit in hits)
        assert await search(runtime, "bob", query="Lisbon", include_conversation=True) == []


async def test_another_user_never_finds_the_turn(tmp_path: Path) -> None:
    async with runtime_of(tmp_path, STATE) as runtime:
        await turn(runtime, "ada")
        assert await search(runtime, "bob", query="Lisbon", include_conversation=True) == []
        assert len(await search(runtime, "ada", query="Lisbon", include_conversation=True)) == 2


async def test_notes_and_turns_are_ranked_together(tmp_path: Path) -> None:
    async with runtime_of(tmp_path, STATE) as runtime:
        ctx = ToolExecutionContext(user_id="ada", session_id="s0")
        saved = await runtime.execute(
            "memory_save", {"content": "Ada prefers an aisle seat to Lisbon"}, ctx
        )
        assert not saved.is_error, saved.output_text
        await turn(runtime)
        hits = await search(runtime, query="Lisbon", include_conversation=True, top_k=3)
        assert sorted(hit["source"] for hit in hits) == ["conversation", "conversation", "note"]
        scores = [hit["score"] for hit in hits]
        assert scores == sorted(scores, reverse=True)
        [note] = [hit for hit in hits if hit["source"] == "note"]
        assert note["note_id"].startswith("note-")
        assert len(await search(runtime, query="Lisbon", include_conversation=True, top_k=1)) == 1
        only_notes = await search(runtime, query="Lisbon")
        assert [hit["source"] for hit in only_notes] == ["note"]


async def test_a_tag_filter_leaves_turns_out(tmp_path: Path) -> None:
    async with runtime_of(tmp_path, STATE) as runtime:
        await turn(runtime)
        found = await search(runtime, query="Lisbon", include_conversation=True, tags=["travel"])
        assert found == []


async def test_recording_can_be_turned_off(tmp_path: Path) -> None:
    config = STATE + "record_conversation = false\n"
    async with runtime_of(tmp_path, config) as runtime:
        assert (await turn(runtime)).stop is StopReason.COMPLETED
        assert await search(runtime, query="Lisbon", include_conversation=True) == []


async def test_a_store_that_cannot_be_opened_never_fails_the_turn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "blocked").write_text("a file where the store's directory should be")
    config = '[state]\nurl = "blocked/state.db"\n'
    async with runtime_of(tmp_path, config) as runtime:
        with caplog.at_level(logging.WARNING, logger="toolcage"):
            done = await turn(runtime)
        assert done.stop is StopReason.COMPLETED
        assert done.text == ANSWER
        assert "conversation turn not recorded" in caplog.text
        assert "blocked" in caplog.text


async def test_without_a_state_store_nothing_is_recorded(tmp_path: Path) -> None:
    async with runtime_of(tmp_path, "[state]\nenabled = false\n") as runtime:
        assert runtime.state is None
        assert (await turn(runtime)).text == ANSWER
        assert not (tmp_path / ".toolcage").exists()
