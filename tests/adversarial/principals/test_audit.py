"""Every audit record names the whole principal of its call: user, agent, session, kind,
channel and the chain of agents above it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from toolcage.runtime import Runtime, SafetyTier, tool

from ._cast import ADA, ADA_BRANCH, ADA_WORKER, BOB, config_with_agents

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]


@tool(safety_tier=SafetyTier.READ_ONLY)
def ping() -> str:
    """Answer pong."""
    return "pong"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class TestAuditRecordsThePrincipal:
    async def test_each_call_record_names_who_made_it(self, tmp_path: Path) -> None:
        config = config_with_agents(tmp_path, '[audit]\npath = "audit.jsonl"\n')
        async with Runtime.from_config(config, tools=[ping]) as runtime:
            for ctx in (ADA, BOB, ADA_WORKER, ADA_BRANCH):  # the reviewer's is refused
                await runtime.execute("ping", {}, ctx)
        found = [r for r in records(tmp_path / "audit.jsonl") if r["type"] == "call"]
        who = [
            (
                r["user_id"],
                r["agent_id"],
                r["session_id"],
                r["session_kind"],
                r["channel_id"],
                r["chain"],
            )
            for r in found
        ]
        assert who == [
            ("ada", "lead", "s1", "main", "chat", ["lead"]),
            ("bob", "lead", "s1", "main", "chat", ["lead"]),
            ("ada", "reviewer", "s1/reviewer", "worker", "chat", ["lead", "reviewer"]),
            ("ada", "lead", "s1/branch", "branch", "chat", ["lead", "lead"]),
        ]
