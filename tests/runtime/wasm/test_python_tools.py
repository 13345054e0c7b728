"""Operators' tools written in Python: scaffolded with ``toolcage new-tool --lang python``,
built into ``toolcage:tool`` components with the pinned componentize-py, loaded from
``[guest_tools] dirs`` and run through ``Runtime.from_config`` + ``execute``.

Two tools are built once per session: the scaffold's (``fs`` and ``log``) and
``python_tools/probe.py``, which imports every interface of the world."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ConfigError
from toolcage.runtime import ProgressUpdate, Runtime, ToolExecutionContext
from toolcage.runtime._errors import UsageError
from toolcage.runtime.cli._new_tool import new_tool
from toolcage.runtime.wasm._component_link import check_imports
from toolcage.runtime.wasm._link import LinkError

from ...adversarial.principals._cast import ADA, ADA_WORKER, BOB, BOB_REVIEWER, config_with_agents

TOOL = "greet"
HERE = Path(__file__).resolve().parent
MOUNTS = '[[mounts.areas]]\nhost = "data"\nguest = "/data"\ntiers = { read_only = "ro" }\n'
PER_USER = (
    '[[mounts.areas]]\nhost = "users/{user}/workspace"\nguest = "/workspace"\n'
    'tiers = { read_only = "ro" }\ncreate = true\n'
)

pytestmark = pytest.mark.anyio


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scaffold's tool, written by the CLI and built by the script it wrote."""
    root = tmp_path_factory.mktemp("pytool")
    command = [sys.executable, "-m", "toolcage.runtime", "new-tool", TOOL, "--lang", "python"]
    done = _run([*command, "--dir", "tools"], root)
    assert "build_greet.sh" in done.stdout
    _run([str(root / "tools" / f"build_{TOOL}.sh")], root)
    return root / "tools"


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python_tools/probe.py`` built with ``python -m toolcage.wasm_tools.build``."""
    root = tmp_path_factory.mktemp("probe")
    for name in ("probe.py", "probe.json"):
        shutil.copy(HERE / "python_tools" / name, root / name)
    build = [sys.executable, "-m", "toolcage.wasm_tools.build", "--python-tool", "probe.py"]
    _run(build, root)
    return root


def site(tmp_path: Path, *tools: Path, body: str = MOUNTS) -> Path:
    """A config directory with ``tools`` under ``tools/`` and ``data/notes.txt``."""
    (tmp_path / "tools").mkdir()
    for folder in tools:
        for file in folder.glob("*.*"):
            shutil.copy(file, tmp_path / "tools" / file.name)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("hello there\nsecond line\n")
    (tmp_path / "secret.txt").write_text("do not show\n")
    config = tmp_path / "toolcage.toml"
    config.write_text('[guest_tools]\ndirs = ["tools"]\n\n' + body)
    return config


async def call(
    config: Path, tool: str, arguments: dict[str, Any], context: Any = None
) -> dict[str, Any]:
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute(tool, arguments, context)
    envelope: dict[str, Any] = result.envelope()
    return envelope


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
