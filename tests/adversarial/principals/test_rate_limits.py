"""One principal's spending never spends another's budget, and ids cannot alias keys."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, ToolResult, tool

from ._cast import ADA, ADA_REVIEWER, BOB, config_with_agents, context

ADA_OPS = context("ada", "ops")
BOB_OPS = context("bob", "ops")

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]


@tool(safety_tier=SafetyTier.READ_ONLY)
def lookup(word: str) -> str:
    """Look a word up."""
    return word


def limited(tmp_path: Path, per: str) -> Runtime:
    body = f"""
[rate_limits.lookups]
tools = ["lookup"]
per = {per}
calls = 1
window = 3600
burst = 1
"""
    return Runtime.from_config(config_with_agents(tmp_path, body), tools=[lookup])


async def spend(runtime: Runtime, ctx: ToolExecutionContext) -> ToolResult:
    return await runtime.execute("lookup", {"word": "x"}, ctx)


def refused(result: ToolResult) -> bool:
    if result.error is None:
        return False
    assert result.error.kind.value == "permission_denied", result.envelope()
    return True


class TestBudgetsArePerPrincipal:
    async def test_per_user_one_users_calls_leave_anothers_budget_whole(
        self, tmp_path: Path
    ) -> None:
        async with limited(tmp_path, '["user"]') as runtime:
            assert not refused(await spend(runtime, ADA))
            assert refused(await spend(runtime, ADA_OPS))  # the same user, another agent
            assert not refused(await spend(runtime, BOB))

    async def test_a_restricted_agent_never_reaches_a_tool_outside_its_profile(
        self, tmp_path: Path
    ) -> None:
        async with limited(tmp_path, '["user"]') as runtime:
            result = await spend(runtime, ADA_REVIEWER)
        assert result.error is not None
        assert result.error.kind.value == "not_found"

    async def test_per_user_and_agent_each_pair_has_its_own(self, tmp_path: Path) -> None:
        async with limited(tmp_path, '["user", "agent"]') as runtime:
            for ctx in (ADA, ADA_OPS, BOB, BOB_OPS):
                assert not refused(await spend(runtime, ctx))
            for ctx in (ADA, ADA_OPS, BOB, BOB_OPS):
                assert refused(await spend(runtime, ctx))

    async def test_ids_that_embed_another_keys_text_stay_apart(self, tmp_path: Path) -> None:
        async with limited(tmp_path, '["user", "agent"]') as runtime:
            assert not refused(await spend(runtime, context("ada", "lead")))
            assert not refused(await spend(runtime, context("ada agent=lead", "x")))
            assert not refused(await spend(runtime, context("ada=", "lead")))
