"""An operator's ``privileged`` and ``hidden`` lists guard a server's tool by either name.

An MCP server names its tools as it likes (``addNumbers``); toolcage calls them by a folded
snake_case name (``basic__add_numbers``). An entry that matched only the server's own
spelling let ``privileged = ["add_numbers"]`` run ``addNumbers`` unapproved, and an entry
that matched nothing was dropped without a word. Here each spelling must guard the tool --
through ``Runtime.from_config``, the ``toolcage call`` command, and ``toolcage mcp``
asking its MCP client -- and an entry that names no tool of its server must stop the config
with its key path, wherever the config is loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import Approval, ApprovalRequest, CallbackApproval, Runtime, SafetyTier

from ..runtime.cli.test_cli import COMMAND
from ..runtime.mcp.serve.test_mcp_server import stdio_session
from ..runtime.mcp_servers import server_entry

pytestmark = pytest.mark.adversarial

# the server's own spelling of its camelCase tool, and toolcage's folded one
SPELLINGS = ["addNumbers", "add_numbers"]
TOOL = "basic__add_numbers"
ITS_TOOLS = "its tools: addNumbers, count, echo, fail, internal, wipe"

# entries that name no tool of the server: a typo, toolcage's full name, another spelling
# that folds elsewhere, and a tool of another server
UNKNOWN = ["add_numbrs", "basic__add_numbers", "AddNumbers ", "delete_note"]


def write_config(tmp_path: Path, **lists: list[str]) -> Path:
    """A config file with the ``basic`` test server and ``lists`` in its entry."""
    (tmp_path / "workspace").mkdir(exist_ok=True)
    entry = server_entry("basic", "basic.py", **lists)
    lines = ["[[mcp.servers]]", *(f"{key} = {json.dumps(value)}" for key, value in entry.items())]
    path = tmp_path / "toolcage.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def runtime_with(
    tmp_path: Path, approval: CallbackApproval | None = None, **lists: list[str]
) -> Runtime:
    return Runtime.from_config(write_config(tmp_path, **lists), approval=approval)


@pytest.mark.anyio
class TestEitherSpellingGuards:
    @pytest.mark.parametrize("spelling", SPELLINGS)
    async def test_a_privileged_tool_is_refused_without_an_approver(
        self, tmp_path: Path, spelling: str
    ) -> None:
        async with runtime_with(tmp_path, privileged=[spelling]) as runtime:
            tiers = {tool.schema().name: tool.safety_tier for tool in runtime.registry}
            result = await runtime.execute(TOOL, {"a": 2, "b": 3})
        assert tiers[TOOL] is SafetyTier.PRIVILEGED
        assert result.error is not None
        assert result.error.kind.value == "permission_denied"

    @pytest.mark.parametrize("spelling", SPELLINGS)
    async def test_a_privileged_tool_asks_the_approver(self, tmp_path: Path, spelling: str) -> None:
        asked: list[str] = []

        def approve(request: ApprovalRequest) -> Approval:
            asked.append(request.tool)
            return Approval.ALLOW_ONCE

        approval = CallbackApproval(approve)
        async with runtime_with(tmp_path, approval, privileged=[spelling]) as runtime:
            result = await runtime.execute(TOOL, {"a": 2, "b": 3})
        assert asked == [TOOL]
        assert result.output_text == "5"

    @pytest.mark.parametrize("spelling", SPELLINGS)
    async def test_a_hidden_tool_is_not_there(self, tmp_path: Path, spelling: str) -> None:
        async with runtime_with(tmp_path, hidden=[spelling]) as runtime:
            result = await runtime.execute(TOOL, {"a": 2, "b": 3})
            listed = TOOL in runtime.registry
        assert not listed
        assert result.error is not None
        assert result.error.kind.value == "not_found"

    @pytest.mark.parametrize("spelling", SPELLINGS)
    async def test_toolcage_mcp_asks_its_client(self, tmp_path: Path, spelling: str) -> None:
        config = write_config(tmp_path, privileged=[spelling])
        asked: list[str] = []

        async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked.append(params.message)
            return types.ElicitResult(action="decline")

        async with stdio_session(tmp_path, "--config", str(config), elicit=elicit) as session:
            result = await session.call_tool(TOOL, {"a": 2, "b": 3})
        assert len(asked) == 1
        assert TOOL in asked[0]
        assert result.is_error
        assert result.structured_content is not None
        assert result.structured_content["error_type"] == "permission_denied"


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_toolcage_call_refuses_it_unapproved(tmp_path: Path, spelling: str) -> None:
    config = write_config(tmp_path, privileged=[spelling])
    done = subprocess.run(
        [*COMMAND, "call", TOOL, '{"a": 2, "b": 3}', "--config", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["error_type"] == "permission_denied"


class TestAnEntryThatNamesNoTool:
    @pytest.mark.parametrize("key", ["privileged", "hidden"])
    @pytest.mark.parametrize("entry", UNKNOWN)
    def test_is_a_config_error_naming_its_key(self, tmp_path: Path, key: str, entry: str) -> None:
        with pytest.raises(ConfigError) as raised:
            runtime_with(tmp_path, None, **{key: ["echo", entry]})
        message = str(raised.value)
        assert message.startswith(f"mcp.servers.0.{key}.1: no tool {entry!r} on server 'basic'")
        assert ITS_TOOLS in message

    def test_a_close_name_is_suggested(self, tmp_path: Path) -> None:
        with pytest.raises(ConfigError, match="did you mean 'add_numbers'"):
            runtime_with(tmp_path, privileged=["add_numbrs"])

    @pytest.mark.parametrize("command", ["tools", "check", "mcp"])
    def test_every_command_stops_on_it(self, tmp_path: Path, command: str) -> None:
        config = write_config(tmp_path, privileged=["delete_note"])
        done = subprocess.run(
            [*COMMAND, command, "--config", str(config)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "TOOLCAGE_MCP_TOKEN"},
            stdin=subprocess.DEVNULL,
            timeout=120,
            check=False,
        )
        output = done.stdout + done.stderr
        assert done.returncode == (1 if command == "check" else 2), output
        assert "mcp.servers.0.privileged.0: no tool 'delete_note' on server 'basic'" in output
        assert "Traceback" not in output
