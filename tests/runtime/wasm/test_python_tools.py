"""Operators' tools written in Python: scaffolded with ``toolcage new-tool --lang python``,
built into ``toolcage:tool`` components with the pinned componentize-py, loaded from
``[guest_tools] dirs`` and run through the doors users use: ``Runtime.from_config`` +
``execute``, an agent turn with a scripted model, ``toolcage call`` and ``toolcage mcp``.

Two tools are built once per session: the scaffold's (``fs`` and ``log``) and
``python_tools/probe.py``, which imports every interface of the world. Builds are kept in
the per-user build cache, so a session after the first takes both from it."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import mcp.types as types
import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import (
    HttpModelClient,
    ProgressUpdate,
    Runtime,
    ToolExecutionContext,
    run_turn,
)
from toolcage.runtime._errors import UsageError
from toolcage.runtime.cli._new_tool import new_tool
from toolcage.runtime.providers import UserMessage
from toolcage.runtime.wasm._component_link import check_imports
from toolcage.runtime.wasm._link import LinkError
from toolcage.wasm_tools._python_build import content_key, installed
from toolcage.wasm_tools._python_tool_build import inputs

from ...adversarial.principals._cast import ADA, ADA_WORKER, BOB, BOB_REVIEWER, config_with_agents
from ..fake_llm import API_KEY, MODEL, FakeModel, FakeModelServer, Reply, tool_results
from ..mcp.serve.test_mcp_server import stdio_session, text_of
from .component_tools import FIRST_LINE, MOUNTS, PER_USER, TOOL, build, call, run_ok, scaffold, site

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scaffold's tool, written by the CLI and built by the script it wrote."""
    return scaffold(tmp_path_factory.mktemp("pytool"), "python")


@pytest.fixture(scope="session")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python_tools/probe.py`` built with ``python -m toolcage.wasm_tools.build``."""
    root = tmp_path_factory.mktemp("probe")
    return build(root, HERE / "python_tools", ("probe.py", "probe.json"), "--python-tool")


class TestScaffoldedTool:
    def test_writes_the_code_its_declaration_and_a_build_command(self, scaffolded: Path) -> None:
        declaration = json.loads((scaffolded / f"{TOOL}.json").read_text())
        assert declaration["needs"] == ["fs", "log"]
        assert "def run(arguments: dict)" in (scaffolded / f"{TOOL}.py").read_text()
        assert "--python-tool greet.py" in (scaffolded / f"build_{TOOL}.sh").read_text()

    async def test_reads_a_file_under_its_mount_beside_the_c_guests(
        self, scaffolded: Path, tmp_path: Path
    ) -> None:
        config = site(tmp_path, scaffolded)
        async with Runtime.from_config(config) as runtime:
            own = await runtime.execute(TOOL, {"path": "/data/notes.txt"})
            builtin = await runtime.execute("file_read", {"path": "/data/notes.txt"})
        assert own.envelope()["result"] == "first line of /data/notes.txt: hello there"
        assert not builtin.is_error
        assert "second line" in builtin.output_text

    async def test_a_path_outside_the_mounts_is_refused(
        self, scaffolded: Path, tmp_path: Path
    ) -> None:
        envelope = await call(site(tmp_path, scaffolded), TOOL, {"path": "/etc/passwd"})
        assert envelope["error_type"] == "permission_denied"

    async def test_a_missing_file_is_the_tools_error(
        self, scaffolded: Path, tmp_path: Path
    ) -> None:
        envelope = await call(site(tmp_path, scaffolded), TOOL, {"path": "/data/none.txt"})
        assert envelope["error_type"] == "execution_error"
        assert envelope["message"] == (
            "ValueError: cannot read /data/none.txt: "
            "/data/none.txt: no such file or directory (ENOENT)"
        )


class TestCapabilities:
    async def test_fs_reads_and_lists_only_beneath_the_mounts(
        self, probe: Path, tmp_path: Path
    ) -> None:
        config = site(tmp_path, probe)
        (tmp_path / "data" / "escape.txt").symlink_to(tmp_path / "secret.txt")
        async with Runtime.from_config(config) as runtime:

            async def probe_call(op: str, path: str) -> str:
                result = await runtime.execute("probe", {"op": op, "path": path})
                assert not result.is_error, result.output_text
                return result.output_text

            assert await probe_call("read", "/data/notes.txt") == "hello there\nsecond line\n"
            assert json.loads(await probe_call("list", "/data")) == ["escape.txt", "notes.txt"]
            for outside in ("/etc/passwd", "/data/../secret.txt", "/data/escape.txt"):
                answer = await probe_call("read", outside)
                assert answer.startswith("refused: "), outside
                assert "do not show" not in answer
                assert "root:" not in answer
            assert "outside the granted mounts" in await probe_call("read", "/etc/passwd")
            assert "is a directory" in await probe_call("read", "/data")

    async def test_clock_log_and_progress(
        self, probe: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        updates: list[ProgressUpdate] = []
        context = ToolExecutionContext(progress=updates.append)
        config = site(tmp_path, probe)
        caplog.set_level(logging.WARNING, logger="toolcage.wasm")
        now = await call(config, "probe", {"op": "now"})
        assert json.loads(now["result"])["timezone"] == "Europe/Paris"
        report = await call(config, "probe", {"op": "report"}, context)
        assert report["result"] == "reported"
        assert [(u.message, u.fraction) for u in updates] == [("half way", 0.5)]
        assert "probe: the probe reports" in caplog.text

    async def test_http_goes_through_the_egress_policy(self, probe: Path, tmp_path: Path) -> None:
        envelope = await call(
            site(tmp_path, probe), "probe", {"op": "fetch", "path": "http://127.0.0.1:9/"}
        )
        answer = json.loads(envelope["result"])
        assert answer["ok"] is False
        assert answer["error_type"] == "permission_denied"

    async def test_an_exception_is_an_execution_error_its_traceback_logged(
        self, probe: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="toolcage.wasm")
        envelope = await call(site(tmp_path, probe), "probe", {"op": "boom"})
        assert envelope["error_type"] == "execution_error"
        assert envelope["message"] == "RuntimeError: no such op 'boom'"
        assert 'probe.py", line' in caplog.text

    async def test_a_withdrawn_grant_fails_the_call(self, probe: Path, tmp_path: Path) -> None:
        body = (
            MOUNTS + '\n[egress.grants]\nprobe = ["fs", "clock", "log", "progress", "scratchpad"]\n'
        )
        envelope = await call(site(tmp_path, probe, body=body), "probe", {"op": "now"})
        assert envelope["error_type"] == "permission_denied"
        assert "toolcage:tool/http@0.1.0" in envelope["message"]


class TestImportCheck:
    WASI = ("wasi:io/poll@0.2.9", "wasi:cli/stdout@0.2.9", "wasi:filesystem/preopens@0.2.0")

    def test_wasi_and_granted_interfaces_pass(self) -> None:
        imports = [*self.WASI, "toolcage:tool/fs@0.1.0", "toolcage:tool/log@0.1.0"]
        assert check_imports("t", imports, ["fs", "log", "clock"]) == {"fs", "log"}

    @pytest.mark.parametrize(
        "name",
        [
            "toolcage:tool/http@0.1.0",  # not granted
            "toolcage:tool/fs@0.2.0",  # another version of a granted one
            "wasi:http/outgoing-handler@0.2.9",  # WASI, but not linked
            "wasi:io/poll@0.3.0",
            "toolcage:python/exec@0.1.0",
            "evil",
        ],
    )
    def test_anything_else_is_refused_by_name(self, name: str) -> None:
        with pytest.raises(LinkError, match=re.escape(repr(name))):
            check_imports("t", [*self.WASI, name], ["fs"])

    def test_new_tool_refuses_a_standard_library_name(self, tmp_path: Path) -> None:
        with pytest.raises(UsageError, match="standard library"):
            new_tool("json", tmp_path, "python")
        assert not list(tmp_path.iterdir())


class TestLoadCheck:
    def test_an_import_beyond_the_declaration_is_refused_naming_it(
        self, probe: Path, tmp_path: Path
    ) -> None:
        config = site(tmp_path, probe)
        declaration = tmp_path / "tools" / "probe.json"
        raw = json.loads(declaration.read_text())
        raw["needs"] = ["fs", "clock", "log", "progress", "scratchpad"]
        declaration.write_text(json.dumps(raw))
        with pytest.raises(ConfigError) as caught:
            Runtime.from_config(config)
        message = str(caught.value)
        assert "probe.json: needs: " in message
        assert "imports 'toolcage:tool/http@0.1.0', which its declaration does not grant" in (
            message
        )

    def test_a_need_the_world_does_not_offer_is_refused(self, probe: Path, tmp_path: Path) -> None:
        config = site(tmp_path, probe)
        declaration = tmp_path / "tools" / "probe.json"
        raw = json.loads(declaration.read_text())
        raw["needs"] = ["fs", "search"]
        declaration.write_text(json.dumps(raw))
        with pytest.raises(ConfigError, match=r"needs\[1\]: 'search' is not offered"):
            Runtime.from_config(config)


class TestPrincipals:
    async def test_a_restricted_agent_cannot_call_it(self, probe: Path, tmp_path: Path) -> None:
        config = site(tmp_path, probe)
        config_with_agents(tmp_path, config.read_text())
        envelope = await call(config, "probe", {"op": "now"}, BOB_REVIEWER)
        assert envelope["error_type"] == "not_found"  # not among the agent's tools
        assert (await call(config, "probe", {"op": "now"}, BOB))["status"] == "success"

    async def test_a_worker_is_refused_what_workers_are_withheld(
        self, probe: Path, tmp_path: Path
    ) -> None:
        envelope = await call(site(tmp_path, probe), "probe", {"op": "now"}, ADA_WORKER)
        assert envelope["error_type"] == "permission_denied"
        assert "imports toolcage:tool/scratchpad@0.1.0" in envelope["message"]

    async def test_two_users_see_only_their_own_mounts(self, probe: Path, tmp_path: Path) -> None:
        config = site(tmp_path, probe, body=PER_USER)
        for user in ("ada", "bob"):
            folder = tmp_path / "users" / user / "workspace"
            folder.mkdir(parents=True)
            (folder / "mine.txt").write_text(f"{user}'s\n")
        async with Runtime.from_config(config) as runtime:
            for who, user in ((ADA, "ada"), (BOB, "bob")):
                result = await runtime.execute(
                    "probe", {"op": "read", "path": "/workspace/mine.txt"}, who
                )
                assert result.output_text == f"{user}'s\n"
                listed = await runtime.execute("probe", {"op": "list", "path": "/workspace"}, who)
                assert json.loads(listed.output_text) == ["mine.txt"]

    async def test_state_relays_reach_only_the_callers_own_state(
        self, probe: Path, tmp_path: Path
    ) -> None:
        async with Runtime.from_config(site(tmp_path, probe)) as runtime:
            wrote = await runtime.execute("probe", {"op": "note", "path": "ada's item"}, ADA)
            assert json.loads(wrote.output_text)["ok"] is True
            ada = json.loads((await runtime.execute("probe", {"op": "notes"}, ADA)).output_text)
            bob = json.loads((await runtime.execute("probe", {"op": "notes"}, BOB)).output_text)
        assert json.loads(ada["text"])["items"] == ["ada's item"]
        assert "ada's item" not in json.dumps(bob)


class TestBuildCache:
    def test_an_unchanged_tool_is_not_built_again(self, scaffolded: Path) -> None:
        wasm = scaffolded / f"{TOOL}.wasm"
        before = wasm.stat().st_mtime_ns
        done = run_ok([str(scaffolded / f"build_{TOOL}.sh")], scaffolded)
        assert done.stdout.strip() == f"{TOOL}.wasm is up to date"
        assert wasm.stat().st_mtime_ns == before

    def test_another_folder_gets_the_cached_build(self, scaffolded: Path, tmp_path: Path) -> None:
        build = [sys.executable, "-m", "toolcage.wasm_tools.build", "--python-tool"]
        done = run_ok([*build, f"{TOOL}.py", "--out", str(tmp_path)], scaffolded)
        assert done.stdout.strip() == f"{tmp_path / TOOL}.wasm is the cached build of these inputs"
        assert (tmp_path / f"{TOOL}.wasm").read_bytes() == (
            scaffolded / f"{TOOL}.wasm"
        ).read_bytes()

    def test_every_input_of_the_build_is_in_its_key(self, tmp_path: Path) -> None:
        new_tool(TOOL, tmp_path, "python")
        source, declaration = tmp_path / f"{TOOL}.py", tmp_path / f"{TOOL}.json"

        def key(of: Path = source) -> str:
            return content_key(inputs(of).items(), [installed("tzdata")])

        keys = [key()]
        raw = json.loads(declaration.read_text())
        declaration.write_text(json.dumps({**raw, "description": "Another text."}))
        assert key() == keys[0]  # the declaration is read at load, not built in
        source.write_text(source.read_text() + "\n# changed\n")
        keys.append(key())
        (tmp_path / "helper.py").write_text("HELP = 1\n")  # a module beside it is bundled
        keys.append(key())
        declaration.write_text(json.dumps({**raw, "needs": ["fs"]}))  # another world
        keys.append(key())
        other = tmp_path / "other.py"
        shutil.copy(source, other)
        shutil.copy(declaration, other.with_suffix(".json"))
        keys.append(key(other))  # the same code as another tool
        tzdata = installed("tzdata")
        bundled = replace(tzdata, key=tzdata.key + b"changed")
        keys.append(content_key(inputs(source).items(), [bundled]))
        assert len(set(keys)) == len(keys)


class TestDoors:
    """The scaffold's tool through an agent turn, ``toolcage call`` and ``toolcage mcp``."""

    async def test_a_model_calls_it_in_a_turn(self, scaffolded: Path, tmp_path: Path) -> None:
        config = site(tmp_path, scaffolded)
        arguments = json.dumps({"path": "/data/notes.txt"})
        model = FakeModel(
            "openai_chat", False, [Reply("", [("c1", TOOL, arguments)]), Reply("Read.")]
        )
        with FakeModelServer(model) as base_url:
            async with (
                Runtime.from_config(config) as runtime,
                HttpModelClient.for_provider(
                    "openai_chat", base_url=base_url, api_key=API_KEY, model=MODEL
                ) as client,
            ):
                turn = await run_turn(client, runtime, [UserMessage("First line?")], context=ADA)
        assert turn.text == "Read."
        declared = [t["function"]["name"] for t in model.requests[0].body["tools"]]
        assert TOOL in declared
        sent = tool_results("openai_chat", model.requests[1].body)
        assert FIRST_LINE in sent[0]["text"]
        assert not sent[0]["error"]

    @pytest.mark.parametrize(
        ("path", "code", "status"),
        [("/data/notes.txt", 0, "success"), ("/etc/passwd", 1, "permission_denied")],
        ids=["granted", "outside"],
    )
    def test_toolcage_call_runs_it(
        self, scaffolded: Path, tmp_path: Path, path: str, code: int, status: str
    ) -> None:
        config = site(tmp_path, scaffolded)
        command = [sys.executable, "-m", "toolcage.runtime", "call", "--config", str(config), TOOL]
        done = subprocess.run(
            [*command, json.dumps({"path": path})],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )
        assert done.returncode == code, done.stderr
        answer = json.loads(done.stdout)
        assert answer.get("error_type", answer["status"]) == status
        if code == 0:
            assert answer["result"] == FIRST_LINE

    async def test_toolcage_mcp_lists_and_calls_it(self, scaffolded: Path, tmp_path: Path) -> None:
        config = site(tmp_path, scaffolded)
        async with stdio_session(tmp_path, "--config", str(config)) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            read = await session.call_tool(TOOL, {"path": "/data/notes.txt"})
            refused = await session.call_tool(TOOL, {"path": "/etc/passwd"})
        listed = tools[TOOL]
        assert listed.description == "Return the first line of a text file."
        assert listed.annotations is not None
        assert listed.annotations.read_only_hint is True
        assert listed.input_schema["required"] == ["path"]
        assert isinstance(read, types.CallToolResult)
        assert not read.is_error
        assert text_of(read) == FIRST_LINE
        assert refused.is_error
        assert refused.structured_content is not None
        assert refused.structured_content["error_type"] == "permission_denied"
