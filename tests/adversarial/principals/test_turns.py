"""An agent turn acts as its principal: a restricted agent is offered only its own tools and
reaches no other even when the model names one, and what a turn sees is its own user's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toolcage.runtime import (
    HttpModelClient,
    Runtime,
    ToolExecutionContext,
    TurnResult,
    UserMessage,
    run_turn,
)

from ...runtime.fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply
from ._cast import ADA, ADA_REVIEWER, BOB, REVIEWER_TOOLS, config_with_agents

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

STATE = '[state]\nurl = "data/state.db"\n'


async def turn(
    runtime: Runtime, ctx: ToolExecutionContext, *replies: Reply
) -> tuple[TurnResult, FakeModel]:
    model = FakeModel("openai_chat", False, list(replies))
    with FakeModelServer(model) as base_url:
        async with HttpModelClient.for_provider(
            "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
        ) as client:
            result = await run_turn(client, runtime, [UserMessage("go")], context=ctx)
    return result, model


def offered(model: FakeModel) -> set[str]:
    return {tool["function"]["name"] for tool in model.requests[0].body.get("tools", [])}


def tool_results(model: FakeModel, request: int) -> list[str]:
    return [m["content"] for m in model.requests[request].body["messages"] if m["role"] == "tool"]


class TestARestrictedAgentsTurn:
    async def test_is_offered_only_its_profiles_tools(self, tmp_path: Path) -> None:
        async with Runtime.from_config(config_with_agents(tmp_path, STATE)) as runtime:
            _, restricted = await turn(runtime, ADA_REVIEWER, Reply("ok"))
            _, lead = await turn(runtime, ADA, Reply("ok"))
        assert offered(restricted) == set(REVIEWER_TOOLS)
        assert offered(lead) > set(REVIEWER_TOOLS)

    async def test_reaches_no_other_tool_when_the_model_names_one(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        args = json.dumps({"path": "/workspace/pwned.txt", "content": "x"})
        async with Runtime.from_config(config_with_agents(tmp_path, STATE)) as runtime:
            _, model = await turn(
                runtime, ADA_REVIEWER, Reply(calls=[("c1", "file_write", args)]), Reply("done")
            )
        assert not (tmp_path / "workspace" / "pwned.txt").exists()
        [result] = tool_results(model, 1)
        assert "not available" in result or "not_found" in result


class TestTurnsSeeOnlyTheirUsersState:
    async def test_a_note_saved_in_adas_turn_is_not_found_in_bobs(self, tmp_path: Path) -> None:
        save = json.dumps({"content": "ada's locker code is in the blue folder"})
        search = json.dumps({"query": "locker code blue folder"})
        async with Runtime.from_config(config_with_agents(tmp_path, STATE)) as runtime:
            await turn(runtime, ADA, Reply(calls=[("c1", "memory_save", save)]), Reply("saved"))
            _, model = await turn(
                runtime, BOB, Reply(calls=[("c2", "memory_search", search)]), Reply("none")
            )
        [result] = tool_results(model, 1)
        assert "locker" not in result
