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
