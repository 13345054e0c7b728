"""Rate-limit counters under contention: several processes taking from one store's
counters at once, through ``Runtime.from_config`` and ``execute``, never fail a call
because the store is busy -- they wait for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HAMMER = """
import json, sys
import anyio
from toolcage.runtime import Runtime, SafetyTier, ToolExecutionContext, tool

@tool(safety_tier=SafetyTier.READ_ONLY)
def lookup(word: str) -> str:
    \"\"\"Look a word up.\"\"\"
    return word

async def main() -> None:
    async with Runtime.from_config(sys.argv[1], tools=[lookup]) as runtime:
        print("ready", flush=True)
        sys.stdin.readline()
        errors: list[str] = []
        for n in range(int(sys.argv[2])):
            ctx = ToolExecutionContext(user_id=f"u{n % 3}")
            result = await runtime.execute("lookup", {"word": "x"}, ctx)
            if result.is_error:
                errors.append(result.output_text)
        print(json.dumps(errors), flush=True)

anyio.run(main)
"""

CONFIG = """
[shell]
mode = "disabled"

[rate_limits.everyone]
tools = ["lookup"]
calls = 1000000
window = 1

[rate_limits.each]
tools = ["lookup"]
per = ["user"]
calls = 1000000
window = 1
"""


class TestContention:
    def test_processes_hammering_one_store_never_see_it_locked(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text(CONFIG)
        script = tmp_path / "hammer.py"
        script.write_text(HAMMER)
        children = [
            subprocess.Popen(
                [sys.executable, str(script), str(tmp_path / "toolcage.toml"), "600"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=tmp_path,
            )
            for _ in range(4)
        ]
        try:
            for child in children:
                assert child.stdout is not None
                assert child.stdout.readline().strip() == "ready"
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            errors = [json.loads(child.communicate(timeout=300)[0]) for child in children]
        finally:
            for child in children:
                child.kill()
                child.wait()
        assert errors == [[], [], [], []]
