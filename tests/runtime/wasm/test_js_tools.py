"""Operators' tools written in JavaScript: scaffolded with ``toolcage new-tool --lang js``,
built into ``toolcage:tool`` components with the pinned componentize-js, loaded from
``[guest_tools] dirs`` like Python tools and run through ``Runtime.from_config`` +
``execute`` and ``toolcage call``.

Two tools are built once per session: the scaffold's (``fs`` and ``log``) and
``js_tools/probe.js`` (``fs``, ``memory`` and ``log``, with a module beside it). Builds are
kept in the per-user build cache, so a session after the first takes both from it. The
tests need Node.js and npm (npm installs componentize-js once per user)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import wasmtime
from toolcage.policies import ConfigError
from toolcage.runtime import Runtime
from toolcage.runtime._errors import UsageError
from toolcage.runtime.cli._new_tool import new_tool
from toolcage.runtime.wasm._component_link import check_imports, imports_of
from toolcage.wasm_tools._js_tool_build import JsBuildError, build_js_tool, build_key, inputs
from toolcage.wasm_tools._js_tool_build import main as build_main
from wasmtime.component import Component

from ...adversarial.principals._cast import ADA, ADA_WORKER, BOB, BOB_REVIEWER, config_with_agents
from .component_tools import FIRST_LINE, PER_USER, TOOL, build, call, run_ok, scaffold, site

HERE = Path(__file__).resolve().parent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        shutil.which("node") is None or shutil.which("npm") is None,
        reason="Node.js and npm are needed to build JavaScript tools (componentize-js)",
    ),
]


@pytest.fixture(scope="session")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scaffold's tool, written by the CLI and built by the script it wrote."""
    return scaffold(tmp_path_factory.mktemp("jstool"), "js")


@pytest.fixture(scope="session")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``js_tools/probe.js`` built with ``python -m toolcage.wasm_tools.build --js-tool``."""
    root = tmp_path_factory.mktemp("jsprobe")
    return build(root, HERE / "js_tools", ("probe.js", "helper.js", "probe.json"), "--js-tool")


class TestScaffoldedTool:
    def test_writes_the_code_its_declaration_and_a_build_command(self, scaffolded: Path) -> None:
        declaration = json.loads((scaffolded / f"{TOOL}.json").read_text())
        assert declaration["needs"] == ["fs", "log"]
        assert "export function run(args)" in (scaffolded / f"{TOOL}.js").read_text()
        assert "--js-tool greet.js" in (scaffolded / f"build_{TOOL}.sh").read_text()

    async def test_reads_a_file_under_its_mount_beside_the_builtins(
        self, scaffolded: Path, tmp_path: Path
    ) -> None:
        async with Runtime.from_config(site(tmp_path, scaffolded)) as runtime:
            own = await runtime.execute(TOOL, {"path": "/data/notes.txt"})
            builtin = await runtime.execute("file_read", {"path": "/data/notes.txt"})
        assert own.envelope()["result"] == FIRST_LINE
        assert "second line" in builtin.output_text

    async def test_a_path_outside_the_mounts_is_refused(
        self, scaffolded: Path, tmp_path: Path
    ) -> None:
        envelope = await call(site(tmp_path, scaffolded), TOOL, {"path": "/etc/passwd"})
        assert envelope["error_type"] == "permission_denied"

    async def test_a_thrown_error_is_the_tools_execution_error(
        self, scaffolded: Path, tmp_path: Path
    ) -> None:
        envelope = await call(site(tmp_path, scaffolded), TOOL, {"path": "/data/none.txt"})
        assert envelope["error_type"] == "execution_error"
        assert envelope["message"] == (
            "Error: cannot read /data/none.txt: /data/none.txt: no such file or directory (ENOENT)"
        )

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

    async def test_a_module_beside_it_is_bundled_and_log_reaches_the_host(
        self, probe: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="toolcage.wasm")
        envelope = await call(site(tmp_path, probe), "probe", {"op": "shout", "path": "hi"})
        assert envelope["result"] == "HI!"
        assert "probe: the probe shouts" in caplog.text

    async def test_a_thrown_error_is_an_execution_error_its_stack_logged(
        self, probe: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.WARNING, logger="toolcage.wasm")
        envelope = await call(site(tmp_path, probe), "probe", {"op": "boom"})
        assert envelope["error_type"] == "execution_error"
        assert envelope["message"] == 'RangeError: no such op "boom"'
        assert "run@app/probe.js:" in caplog.text

    async def test_a_loop_meets_its_deadline_and_a_memory_bomb_its_limit(
        self, probe: Path, tmp_path: Path
    ) -> None:
        async with Runtime.from_config(site(tmp_path, probe)) as runtime:
            spun = await runtime.execute("probe", {"op": "spin"})
            hogged = await runtime.execute("probe", {"op": "hog"})
            after = await runtime.execute("probe", {"op": "shout", "path": "after"})
        assert spun.envelope()["error_type"] == "timeout"
        assert hogged.envelope()["error_type"] == "execution_error"
        assert after.output_text == "AFTER!"  # the next call runs in a fresh instance


class TestPrincipals:
    async def test_memory_reaches_only_the_callers_own_notes(
        self, probe: Path, tmp_path: Path
    ) -> None:
        async with Runtime.from_config(site(tmp_path, probe)) as runtime:

            async def probe_call(op: str, text: str, who: Any) -> dict[str, Any]:
                result = await runtime.execute("probe", {"op": op, "path": text}, who)
                answer: dict[str, Any] = json.loads(result.output_text)
                return answer

            saved = await probe_call("note", "ada drinks rooibos", ADA)
            assert saved["ok"] is True
            ada = await probe_call("notes", "rooibos", ADA)
            bob = await probe_call("notes", "rooibos", BOB)
            worker = await probe_call("notes", "rooibos", ADA_WORKER)
            worker_save = await probe_call("note", "worker's note", ADA_WORKER)
        assert ada["details"]["note_ids"] == [saved["details"]["note_id"]]
        assert "rooibos" not in json.dumps(bob)
        assert worker["details"]["note_ids"] == ada["details"]["note_ids"]  # the user's notes
        assert worker_save["ok"] is False  # a worker's memory answers search alone

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

    async def test_a_restricted_agent_cannot_call_it(self, probe: Path, tmp_path: Path) -> None:
        config = site(tmp_path, probe)
        config_with_agents(tmp_path, config.read_text())
        arguments = {"op": "shout", "path": "x"}
        assert (await call(config, "probe", arguments, BOB_REVIEWER))["error_type"] == "not_found"
        assert (await call(config, "probe", arguments, BOB))["result"] == "X!"


class TestLoadCheck:
    def test_an_import_beyond_the_declaration_is_refused_naming_it(
        self, probe: Path, tmp_path: Path
    ) -> None:
        config = site(tmp_path, probe)
        declaration = tmp_path / "tools" / "probe.json"
        raw = json.loads(declaration.read_text())
        declaration.write_text(json.dumps({**raw, "needs": ["fs", "log"]}))
        with pytest.raises(ConfigError) as caught:
            Runtime.from_config(config)
        assert "imports 'toolcage:tool/memory@0.1.0', which its declaration does not grant" in (
            str(caught.value)
        )

    def test_it_imports_only_linked_wasi_and_its_grants(self, probe: Path) -> None:
        engine = wasmtime.Engine()
        imports = imports_of(Component.from_file(engine, str(probe / "probe.wasm")), engine)
        assert check_imports("probe", imports, ["fs", "memory", "log"]) == {"fs", "memory", "log"}
        assert not [name for name in imports if name.startswith("wasi:http/")]


class TestBuild:
    def test_an_unchanged_tool_is_not_built_again(self, scaffolded: Path) -> None:
        wasm = scaffolded / f"{TOOL}.wasm"
        before = wasm.stat().st_mtime_ns
        done = run_ok([str(scaffolded / f"build_{TOOL}.sh")], scaffolded)
        assert done.stdout.strip() == f"{TOOL}.wasm is up to date"
        assert wasm.stat().st_mtime_ns == before

    def test_every_input_of_the_build_is_in_its_key(self, tmp_path: Path) -> None:
        new_tool(TOOL, tmp_path, "js")
        source, declaration = tmp_path / f"{TOOL}.js", tmp_path / f"{TOOL}.json"

        def key(of: Path = source, compiler: str = "componentize-js==0.23.0 lock") -> str:
            return build_key(inputs(of), compiler)

        keys = [key()]
        raw = json.loads(declaration.read_text())
        declaration.write_text(json.dumps({**raw, "description": "Another text."}))
        assert key() == keys[0]  # the declaration is read at load, not built in
        source.write_text(source.read_text() + "\n// changed\n")
        keys.append(key())
        (tmp_path / "helper.js").write_text("export const HELP = 1;\n")
        keys.append(key())
        declaration.write_text(json.dumps({**raw, "needs": ["fs"]}))  # another world
        keys.append(key())
        other = tmp_path / "other.js"
        shutil.copy(source, other)
        shutil.copy(declaration, other.with_suffix(".json"))
        keys.append(key(other))  # the same code as another tool
        keys.append(key(compiler="componentize-js==0.23.0 another lock"))
        assert len(set(keys)) == len(keys)

    def test_a_need_the_world_does_not_offer_fails_the_build(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        new_tool(TOOL, tmp_path, "js")
        declaration = tmp_path / f"{TOOL}.json"
        raw = json.loads(declaration.read_text())
        declaration.write_text(json.dumps({**raw, "needs": ["fs", "shell"]}))
        assert build_main(["--js-tool", str(tmp_path / f"{TOOL}.js")]) == 1
        assert "needs[1]: 'shell' is not offered to a component tool" in capsys.readouterr().err
        assert not (tmp_path / f"{TOOL}.wasm").exists()

    def test_without_node_the_build_says_what_is_missing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        new_tool(TOOL, tmp_path, "js")
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing installed
        with pytest.raises(JsBuildError, match=r"npm is not on PATH: Node\.js and npm are needed"):
            build_js_tool(tmp_path / f"{TOOL}.js")

    def test_new_tool_refuses_a_name_of_the_build(self, tmp_path: Path) -> None:
        with pytest.raises(UsageError, match="name of a module of the build"):
            new_tool("tool_app", tmp_path, "js")
        assert not os.listdir(tmp_path)
