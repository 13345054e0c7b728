"""The toolcage command, run as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def toolcage(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolcage.runtime", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


class TestCli:
    def test_tools_lists_the_builtin_tools(self) -> None:
        done = toolcage("tools", "--json")
        assert done.returncode == 0, done.stderr
        names = [row["name"] for row in json.loads(done.stdout)]
        assert "tool_output_read" in names

    def test_the_sidecar_is_a_subcommand(self) -> None:
        assert "sidecar" in toolcage("--help").stdout
        done = toolcage("sidecar", "--help")
        assert done.returncode == 0, done.stderr
        assert "--socket" in done.stdout

    def test_tool_error_prints_envelope_and_exits_1(self) -> None:
        done = toolcage("call", "no_such_tool", "{}")
        assert done.returncode == 1
        envelope = json.loads(done.stdout)
        assert envelope["error_type"] == "not_found"

    def test_malformed_json_argument_is_a_validation_error(self) -> None:
        done = toolcage("call", "tool_output_read", "{nope")
        assert done.returncode == 1
        assert json.loads(done.stdout)["error_type"] == "validation_error"

    def test_bad_usage_exits_2(self) -> None:
        assert toolcage("call").returncode == 2
        assert toolcage("frobnicate").returncode == 2

    def test_broken_config_exits_2_naming_the_key(self, tmp_path: Path) -> None:
        config = tmp_path / "c.toml"
        config.write_text("[limits]\nbogus = 1\n")
        done = toolcage("tools", "--config", str(config))
        assert done.returncode == 2
        assert "limits.bogus: unknown key" in done.stderr

    def test_jsonl_answers_each_line_in_order(self) -> None:
        lines = [
            json.dumps({"tool": "no_such_tool", "arguments": {}}),
            "not json",
            json.dumps({"tool": "tool_output_read", "arguments": {"handle": "out_0"}}),
        ]
        done = toolcage("call", "--jsonl", stdin="\n".join(lines) + "\n")
        assert done.returncode == 1
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        assert [a["error_type"] for a in answers] == ["not_found", "validation_error", "not_found"]
        assert answers[2]["tool"] == "tool_output_read"
