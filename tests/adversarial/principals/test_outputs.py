"""A truncated output's handle is readable only by the principal whose call made it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, tool

from ._cast import ADA, ADA_REVIEWER, BOB, config_with_agents, context

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]


@tool(safety_tier=SafetyTier.READ_ONLY)
def report() -> str:
    """A long report."""
    return "secret line\n" * 4000


async def handle_for(runtime: Runtime, ctx: ToolExecutionContext) -> str:
    shown = await runtime.execute("report", {}, ctx)
    match = re.search(r'handle "([^"]+)"', shown.output_text)
    assert match is not None, shown.output_text[-200:]
    return match.group(1)


async def read(runtime: Runtime, handle: str, ctx: ToolExecutionContext) -> str | None:
    result = await runtime.execute("tool_output_read", {"handle": handle}, ctx)
    if result.error is not None:
        assert result.error.kind.value == "not_found", result.envelope()
        return None
    return result.output_text


class TestHandlesStayWithTheirPrincipal:
    @pytest.mark.parametrize(
        "stranger",
        [
            BOB,  # another user, the same session id and agent
            ADA_REVIEWER,  # the same user and session id, another agent
            context("ada", session="s2"),  # the same user and agent, another session
        ],
        ids=["other-user", "other-agent", "other-session"],
    )
    async def test_no_other_principal_reads_a_handle(
        self, tmp_path: Path, stranger: ToolExecutionContext
    ) -> None:
        async with Runtime.from_config(config_with_agents(tmp_path), tools=[report]) as runtime:
            handle = await handle_for(runtime, ADA)
            assert await read(runtime, handle, stranger) is None
            assert (await read(runtime, handle, ADA) or "").startswith("secret line")
