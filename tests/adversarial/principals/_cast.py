"""The cast of the multi-principal suites: two users, two agents, three session kinds.

``lead`` is unrestricted; ``reviewer`` is restricted to :data:`REVIEWER_TOOLS` by the
config's ``[agents.reviewer]``. Every suite uses :func:`config_with_agents` so the two
agents are the same everywhere.
"""

from __future__ import annotations

from pathlib import Path

from toolcage.runtime import Principal, SessionKind, SessionLink, ToolExecutionContext

REVIEWER_TOOLS = (
    "file_read",
    "file_list",
    "memory_search",
    "memory_save",
    "schedule_create",
    "schedule_search",
    "scratchpad_read",
    "scratchpad_write",
    "tool_output_read",
)
"""What the restricted agent may call."""

AGENTS_TOML = f"""
[agents.reviewer]
tools = {list(REVIEWER_TOOLS)!r}
session = "worker"
description = "reads and notes"
"""
"""The agent profiles every suite's config holds (``lead`` is left unrestricted)."""


def context(
    user: str,
    agent: str = "lead",
    session: str = "s1",
    *,
    kind: SessionKind = SessionKind.MAIN,
    channel: str | None = "chat",
    parents: tuple[SessionLink, ...] = (),
) -> ToolExecutionContext:
    """A call context of ``user`` through ``agent`` in ``session``."""
    return ToolExecutionContext(
        principal=Principal(
            user_id=user,
            agent_id=agent,
            session_id=session,
            session_kind=kind,
            channel_id=channel,
            parents=parents,
            delegation_depth=len(parents),
        )
    )


ADA = context("ada")
BOB = context("bob")
ADA_REVIEWER = context("ada", "reviewer")
BOB_REVIEWER = context("bob", "reviewer")
ADA_WORKER = context(
    "ada",
    "reviewer",
    "s1/reviewer",
    kind=SessionKind.WORKER,
    channel="chat",
    parents=(SessionLink("lead", "s1", "chat"),),
)
ADA_BRANCH = context(
    "ada",
    "lead",
    "s1/branch",
    kind=SessionKind.BRANCH,
    channel="chat",
    parents=(SessionLink("lead", "s1", "chat"),),
)


def config_with_agents(directory: Path, body: str = "") -> Path:
    """A config file in ``directory`` holding ``body`` and the cast's agent profiles."""
    path = directory / "toolcage.toml"
    path.write_text(body + "\n" + AGENTS_TOML)
    return path
