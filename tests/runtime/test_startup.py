"""What a new process loads and builds on its way to the first result.

Each case runs a fresh interpreter (modules already imported by the test run would hide
what startup itself loads) through ``Runtime.from_config`` and ``execute``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

CHILD = """
import gc, json, ssl, sys
import anyio
from toolcage.runtime import FunctionDecl, Runtime, SafetyTier, ToolResult

class Shaped:
    safety_tier = SafetyTier.READ_ONLY
    timeout = 5.0
    def schema(self):
        return FunctionDecl("shaped", "Echo.", {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 1}},
            "required": ["n"],
            "additionalProperties": False,
        })
    async def execute(self, args, ctx):
        return ToolResult.text("ok")

OPTIONAL = ("jsonschema", "docstring_parser", "toolcage.runtime.agent._loop",
            "toolcage.runtime.agent._model_client", "toolcage.runtime._decorator")

async def main():
    async with Runtime.from_config(None, tools=[Shaped()]) as runtime:
        tls_contexts = sum(isinstance(o, ssl.SSLContext) for o in gc.get_objects())
        good = (await runtime.execute("shaped", {"n": 2})).envelope()
        loaded = sorted(m for m in OPTIONAL if m in sys.modules)
        bad = (await runtime.execute("shaped", {"n": 0})).envelope()
        return {"good": good["status"], "loaded": loaded, "tls_contexts": tls_contexts,
                "bad": [bad["error_type"], bad.get("field")],
                "jsonschema_after_bad": "jsonschema" in sys.modules}

print(json.dumps(anyio.run(main)))
"""


def run_child(folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


class TestWhatStartupLoads:
    def test_a_valid_call_needs_neither_jsonschema_nor_the_agent_loop(self, tmp_path: Path) -> None:
        report = run_child(tmp_path)
        assert report["good"] == "success"
        assert report["loaded"] == []

    def test_a_refusal_is_still_worded_by_jsonschema(self, tmp_path: Path) -> None:
        report = run_child(tmp_path)
        assert report["bad"] == ["validation_error", "n"]
        assert report["jsonschema_after_bad"] is True

    def test_from_config_loads_no_tls_context_before_a_request_needs_one(
        self, tmp_path: Path
    ) -> None:
        assert run_child(tmp_path)["tls_contexts"] == 0


CALL_CHILD = """
import json, sys
from toolcage.runtime.cli import main

try:
    status = main(sys.argv[2:])
finally:  # --help leaves by SystemExit
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(sorted(sys.modules), out)
sys.exit(status)
"""

NOT_FOR_A_FILE_CALL = (
    "httpx",  # the network tools' client: loaded by the first request
    "httpcore",
    "rich",  # httpx's command line, which importing httpx loads when rich is installed
    "click",
    "jsonschema",  # words a refusal
    "apsw",  # the embedded state store: the first state tool or rate limit opens it
    "sqlite_vec",
    "mcp",  # the MCP SDK: `toolcage mcp` and configs with [mcp] servers
    "toolcage.runtime.agent._model_client",  # `toolcage scheduler`: the provider adapters
    "toolcage.runtime.agent.providers",
    "toolcage.runtime.selftest",  # `toolcage selftest`: the attack corpora
    "toolcage.runtime.cli._check",  # `toolcage check`
    "toolcage.host_bindings._http_connect",  # an httpcore backend
    "toolcage.host_bindings._store._embedders",  # a store that embeds
    "toolcage.host_bindings._store._hashing",
)
"""Modules a ``toolcage call file_read`` process does without: each is loaded by the verb,
the tool or the config that needs it, never by start-up."""


def call_modules(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``toolcage ARGV`` (its ``main``) in a fresh interpreter: what it printed, and the
    names of the modules it had loaded when it was done."""
    loaded = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CALL_CHILD), str(loaded), *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    names: list[str] = json.loads(loaded.read_text("utf-8")) if loaded.exists() else []
    return done, set(names)


def heavy(names: set[str]) -> list[str]:
    """Which of :data:`NOT_FOR_A_FILE_CALL` (or their submodules) ``names`` holds."""
    return sorted(
        name
        for name in names
        if any(name == m or name.startswith(m + ".") for m in NOT_FOR_A_FILE_CALL)
    )


class TestWhatACliCallLoads:
    def test_a_file_read_loads_no_module_only_other_verbs_or_tools_need(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "files").mkdir()
        (tmp_path / "files" / "notes.txt").write_text("one\ntwo\n", "utf-8")
        (tmp_path / "toolcage.toml").write_text(
            '[[mounts.areas]]\nhost = "files"\nguest = "/workspace"\n'
            'tiers = { read_only = "ro", side_effecting = "rw" }\n',
            "utf-8",
        )
        done, names = call_modules(
            tmp_path,
            "call",
            "file_read",
            '{"path": "/workspace/notes.txt"}',
            "--config",
            str(tmp_path / "toolcage.toml"),
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["status"] == "success"
        assert "toolcage.runtime.wasm" in names  # the probe sees what the call loaded
        assert heavy(names) == []

    def test_the_verbs_that_need_them_still_load_them(self, tmp_path: Path) -> None:
        done, names = call_modules(tmp_path, "scheduler", "--help")
        assert done.returncode == 0, done.stderr
        assert "openai_chat" in done.stdout  # the providers are named in the help
        assert "toolcage.runtime.agent._model_client" in names
        done, names = call_modules(tmp_path, "selftest", "--help")
        assert done.returncode == 0, done.stderr
        assert "toolcage.runtime.selftest" in names
        assert "ssrf" in done.stdout
