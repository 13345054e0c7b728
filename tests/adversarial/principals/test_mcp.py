"""An MCP client of ``toolcage mcp`` cannot choose whom its calls belong to.

The server has one user -- the account that started it, the principal's default user --
one agent profile (``--agent``, else ``default``), and a session per MCP session, whose id
the server draws. A client names a tool and its arguments and may attach ``_meta``; none of
it reaches the principal. So here a client claims another user, agent and session in both
places (the cast's ``bob``, the unrestricted ``lead`` for a ``reviewer`` server, and the
other client's session id), and the calls still belong to the server's own principal.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, tool
from toolcage.runtime.mcp.serve._serve import serve_http

from ...runtime.mcp.serve.test_mcp_server import http_session, served, socket_session, text_of
from ._cast import REVIEWER_TOOLS, config_with_agents

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]


@tool(safety_tier=SafetyTier.READ_ONLY)
def whoami(
    ctx: ToolExecutionContext, user_id: str = "", agent_id: str = "", session_id: str = ""
) -> dict[str, Any]:
    """Whom the call belongs to; the arguments are what a client claims to be."""
    return ctx.principal.to_record()


@tool(safety_tier=SafetyTier.READ_ONLY)
def report() -> str:
    """A long report."""
    return "secret line\n" * 4000


TOKEN = "the-operators-token"  # noqa: S105 - a test's own server


@asynccontextmanager
async def serving(tmp_path: Path, agent: str) -> AsyncIterator[str]:
    """``whoami`` and the built-in tools served for ``agent`` over HTTP; yields the URL."""
    (tmp_path / "workspace").mkdir()
    runtime = Runtime.from_config(config_with_agents(tmp_path), tools=[whoami, report])
    log = io.StringIO()
    async with anyio.create_task_group() as group:
        group.start_soon(partial(serve_http, runtime, agent, "127.0.0.1", 0, TOKEN, log=log))
        while "/mcp" not in log.getvalue():  # noqa: ASYNC110 - the server's own output
            await anyio.sleep(0.02)
        yield log.getvalue().split()[-1]
        group.cancel_scope.cancel()


def client(url: str) -> AbstractAsyncContextManager[ClientSession]:
    return http_session(url, {"Authorization": f"Bearer {TOKEN}"})


async def claim(session: ClientSession, pose_as: dict[str, str]) -> dict[str, Any]:
    """Call ``whoami`` claiming ``pose_as`` in the arguments and in ``_meta``."""
    meta: Any = {**pose_as, "principal": pose_as, "toolcage/principal": pose_as}
    result = await session.call_tool("whoami", pose_as, meta=meta)
    assert not result.is_error, text_of(result)
    record: dict[str, Any] = json.loads(text_of(result))
    return record


class TestTheServerChoosesThePrincipal:
    async def test_two_clients_posing_as_others_each_keep_their_own_session(
        self, tmp_path: Path
    ) -> None:
        async with (
            serving(tmp_path, "lead") as url,
            client(url) as first,
            client(url) as second,
        ):
            mine = await claim(first, {})
            theirs = await claim(second, {})
            # each now claims to be bob, through the other agent, in the other's session
            pose_first = {"user_id": "bob", "agent_id": "reviewer"}
            pose_first["session_id"] = theirs["session_id"]
            pose_second = {**pose_first, "session_id": mine["session_id"]}
            mine_again = await claim(first, pose_first)
            theirs_again = await claim(second, pose_second)
        assert mine_again == mine
        assert theirs_again == theirs
        assert mine["session_id"] != theirs["session_id"]
        for record in (mine, theirs):
            assert record["user_id"] == "local"
            assert record["agent_id"] == "lead"
            assert record["session_id"].startswith("mcp-")
            assert record["parents"] == []

    async def test_a_restricted_agents_client_cannot_claim_the_unrestricted_one(
        self, tmp_path: Path
    ) -> None:
        async with serving(tmp_path, "reviewer") as url, client(url) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            meta: Any = {"agent_id": "lead", "user_id": "bob"}
            refused = await session.call_tool(
                "whoami", {"agent_id": "lead", "user_id": "bob"}, meta=meta
            )
            wrote = await session.call_tool(
                "file_write", {"path": "/workspace/x", "content": "x"}, meta=meta
            )
        assert names <= set(REVIEWER_TOOLS)
        assert "file_read" in names
        for result in (refused, wrote):
            assert isinstance(result, types.CallToolResult)
            assert result.is_error
        assert not (tmp_path / "workspace" / "x").exists()


class TestASessionKeepsItsOwn:
    async def test_a_truncated_output_is_read_back_in_its_session_and_no_other(
        self, tmp_path: Path
    ) -> None:
        async with (
            serving(tmp_path, "lead") as url,
            client(url) as owner,
            client(url) as stranger,
        ):
            shown = text_of(await owner.call_tool("report", {}))
            match = re.search(r'handle "([^"]+)"', shown)
            assert match is not None, shown[-200:]
            arguments = {"handle": match.group(1)}
            theirs = await stranger.call_tool("tool_output_read", arguments)
            mine = await owner.call_tool("tool_output_read", arguments)
        assert theirs.is_error
        assert theirs.structured_content is not None
        assert theirs.structured_content["error_type"] == "not_found"
        assert not mine.is_error, text_of(mine)
        assert text_of(mine).startswith("secret line")


class TestTheCommandsAgent:
    async def test_agent_restricts_what_the_socket_serves(self, tmp_path: Path) -> None:
        config = config_with_agents(tmp_path)
        path = tmp_path / "mcp.sock"
        args = ("--socket", str(path), "--config", str(config))
        with served(tmp_path, *args, "--agent", "reviewer"):
            async with socket_session(path) as session:
                restricted = {t.name for t in (await session.list_tools()).tools}
                wrote = await session.call_tool(
                    "file_write", {"path": "/workspace/x", "content": "x"}
                )
        with served(tmp_path, *args):
            async with socket_session(path) as session:
                unrestricted = {t.name for t in (await session.list_tools()).tools}
        assert restricted <= set(REVIEWER_TOOLS)
        assert "file_write" in unrestricted - restricted
        assert wrote.is_error
        assert not (tmp_path / "workspace" / "x").exists()
