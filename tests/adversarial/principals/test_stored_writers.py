"""Every stored note, conversation event and scratchpad records the principal that wrote it,
whole, on both backends -- and what a row belongs to stays the user's (notes and turns)
or the session's (a pad), whoever of the user's agents wrote it.

Notes record their first and their last writer, events the principal of the turn, a pad
its last writer (``Principal.to_record()`` JSON in ``created_by``/``updated_by``). They
are for accountability: the tools never show them, and no access decision reads them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import apsw
import libsql_client
import pytest
from toolcage.runtime import HttpModelClient, Principal, Runtime, ToolExecutionContext, run_turn
from toolcage.runtime.providers import UserMessage

from ...host_bindings.store.libsql_server import LibsqlServer
from ...runtime.fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply
from ._cast import ADA, ADA_BRANCH, ADA_REVIEWER, BOB, config_with_agents

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

Query = Callable[[str], Sequence[Sequence[Any]]]


@asynccontextmanager
async def runtime_on(tmp_path: Path, backend: str) -> AsyncIterator[tuple[Runtime, Query]]:
    """A runtime of the cast's agents on a store of ``backend``, and a function reading
    the store's tables directly (as an operator would)."""
    if backend == "embedded":
        path = config_with_agents(tmp_path, '[state]\nurl = "data/state.db"\n')
        async with Runtime.from_config(path) as runtime:

            def query(sql: str) -> list[Any]:
                conn = apsw.Connection(str(tmp_path / "data/state.db"))
                try:
                    return list(conn.execute(sql))
                finally:
                    conn.close()

            yield runtime, query
        return
    with LibsqlServer(tmp_path / "remote.db") as server:
        client = libsql_client.create_client_sync(server.url)
        path = config_with_agents(tmp_path, f'[state]\nurl = "{server.url}"\n')
        try:
            async with Runtime.from_config(path) as runtime:
                yield runtime, lambda sql: list(client.execute(sql).rows)
        finally:
            client.close()


async def ok(runtime: Runtime, tool: str, ctx: ToolExecutionContext, **args: Any) -> Any:
    result = await runtime.execute(tool, args, ctx)
    assert not result.is_error, result.output_text
    return json.loads(result.output_text.split("\n", 1)[0])


def writer(stored: str | None) -> Principal:
    assert stored is not None
    return Principal.from_record(json.loads(stored))


@pytest.fixture(params=["embedded", "remote"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class TestWritersAreRecorded:
    async def test_a_note_records_its_first_and_last_writer(
        self, tmp_path: Path, backend: str
    ) -> None:
        async with runtime_on(tmp_path, backend) as (runtime, query):
            saved = await ok(runtime, "memory_save", ADA_REVIEWER, content="the boat is blue")
            # the restricted agent may not update; the user's other agent updates her note
            note_id = saved["note_id"]
            await ok(runtime, "memory_update", ADA, note_id=note_id, content="the boat is red")
            [(created, updated)] = query("SELECT created_by, updated_by FROM notes")
            assert writer(created) == ADA_REVIEWER.principal
            assert writer(updated) == ADA.principal
            [hit] = await ok(runtime, "memory_search", ADA_REVIEWER, query="boat")
            assert hit["text"] == "the boat is red"
            assert not {"created_by", "updated_by", "principal"} & set(hit)
            assert await ok(runtime, "memory_search", BOB, query="boat") == []

    async def test_a_pad_records_its_last_writer_and_stays_the_sessions(
        self, tmp_path: Path, backend: str
    ) -> None:
        async with runtime_on(tmp_path, backend) as (runtime, query):
            await ok(runtime, "scratchpad_write", ADA, items=["plan the trip"])
            await ok(runtime, "scratchpad_write", ADA_REVIEWER, items=["check the plan"])
            [(session, updated)] = query("SELECT session_id, updated_by FROM pads")
            assert (session, writer(updated)) == ("s1", ADA_REVIEWER.principal)
            assert (await ok(runtime, "scratchpad_read", ADA))["items"] == ["check the plan"]
            assert (await ok(runtime, "scratchpad_read", BOB))["items"] == []

    async def test_a_turns_events_record_the_turns_principal(
        self, tmp_path: Path, backend: str
    ) -> None:
        async with runtime_on(tmp_path, backend) as (runtime, query):
            model = FakeModel("openai_chat", False, [Reply("The ferry leaves at noon.")])
            with FakeModelServer(model) as base_url:
                async with HttpModelClient.for_provider(
                    "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
                ) as client:
                    message = [UserMessage("When does the ferry leave?")]
                    await run_turn(client, runtime, message, context=ADA_BRANCH)
            stored = query("SELECT session_id, role, created_by FROM events ORDER BY id")
            assert [(session, role) for session, role, _ in stored] == [
                ("s1/branch", "user"),
                ("s1/branch", "assistant"),
            ]
            assert {writer(created) for _, _, created in stored} == {ADA_BRANCH.principal}
            hits = await ok(
                runtime, "memory_search", ADA_REVIEWER, query="ferry", include_conversation=True
            )
            assert len(hits) == 2  # the user's turns, through any of her agents
            assert (
                await ok(runtime, "memory_search", BOB, query="ferry", include_conversation=True)
                == []
            )
