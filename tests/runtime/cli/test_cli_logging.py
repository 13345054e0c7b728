"""Structured logs of the commands: ``--log-format json|text`` and ``-v``, run as processes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ...sidecar.conftest import make_workspace
from .test_cli import toolcage

CRASHING_CLI = '''
import sys
from toolcage.runtime import Runtime, cli, tool

@tool
def explode(text: str) -> str:
    """Always fails."""
    raise RuntimeError("boom\\nsecond line")

builtins = Runtime.from_config.__func__

def with_explode(cls, *args, **kwargs):
    return builtins(cls, *args, tools=[explode], **kwargs)

Runtime.from_config = classmethod(with_explode)
sys.exit(cli.main())
'''
"""The ``toolcage`` command with one more host tool, one that crashes."""


def crashing_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "toolcage_with_explode.py"
    script.write_text(CRASHING_CLI)
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


class TestACrashingTool:
    def test_is_one_json_event_without_a_traceback(self, tmp_path: Path) -> None:
        done = crashing_cli(tmp_path, "call", "explode", '{"text": "x"}', "--log-format", "json")
        assert done.returncode == 1
        envelope = json.loads(done.stdout)
        assert envelope["error_type"] == "execution_error"
        assert envelope["message"] == "RuntimeError: boom\nsecond line"
        assert "Traceback" not in done.stdout
        assert "Traceback" not in done.stderr
        [record] = json_lines(done.stderr)
        assert record["event"] == "tool.crash"
        assert record["level"] == "error"
        assert record["logger"] == "toolcage"
        assert record["tool"] == "explode"
        assert record["call_id"].startswith("call_")
        assert record["error"] == "RuntimeError: boom\nsecond line"
        assert record["message"] == "tool explode crashed"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record["time"])
        assert "traceback" not in record

    def test_is_one_text_line_by_default(self, tmp_path: Path) -> None:
        done = crashing_cli(tmp_path, "call", "explode", '{"text": "x"}')
        assert done.returncode == 1
        [line] = done.stderr.splitlines()
        assert " ERROR tool.crash: tool explode crashed tool=explode call_id=call_" in line
        assert line.endswith(' error="RuntimeError: boom\\nsecond line"')
        assert "Traceback" not in done.stderr

    def test_verbose_adds_the_traceback_to_the_log_only(self, tmp_path: Path) -> None:
        done = crashing_cli(
            tmp_path, "call", "explode", '{"text": "x"}', "--log-format", "json", "-v"
        )
        [record] = json_lines(done.stderr)
        assert record["traceback"].startswith("Traceback (most recent call last):")
        assert 'raise RuntimeError("boom\\nsecond line")' in record["traceback"]
        assert "Traceback" not in done.stdout

    def test_verbose_text_puts_the_traceback_under_its_line(self, tmp_path: Path) -> None:
        done = crashing_cli(tmp_path, "call", "explode", '{"text": "x"}', "-v")
        first, *rest = done.stderr.splitlines()
        assert " ERROR tool.crash: " in first
        assert rest[0] == "Traceback (most recent call last):"

    def test_a_jsonl_batch_logs_one_event_per_crash(self, tmp_path: Path) -> None:
        lines = "".join(
            json.dumps({"tool": "explode", "arguments": {"text": "x"}, "id": str(i)}) + "\n"
            for i in range(3)
        )
        script = tmp_path / "toolcage_with_explode.py"
        script.write_text(CRASHING_CLI)
        done = subprocess.run(
            [sys.executable, str(script), "call", "--jsonl", "--log-format", "json"],
            input=lines,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        records = json_lines(done.stderr)
        assert [r["event"] for r in records] == ["tool.crash"] * 3
        assert len({r["call_id"] for r in records}) == 3


class TestOptions:
    @pytest.mark.parametrize("command", ["tools", "call", "check", "mcp", "scheduler", "audit"])
    def test_every_command_takes_the_logging_options(self, command: str) -> None:
        done = toolcage(command, "--help")
        assert done.returncode == 0, done.stderr
        assert "--log-format {text,json}" in done.stdout
        assert "-v, --verbose" in done.stdout

    def test_an_unknown_format_is_bad_usage(self) -> None:
        done = toolcage("tools", "--log-format", "xml")
        assert done.returncode == 2
        assert "invalid choice: 'xml'" in done.stderr

    def test_a_quiet_command_writes_no_log_record(self) -> None:
        done = toolcage("call", "get_current_time", "{}", "--log-format", "json")
        assert done.returncode == 0, done.stderr
        # stderr holds the result's display line, for people, and nothing else
        [line] = done.stderr.splitlines()
        assert line.startswith("Current time in ")


class TestSidecar:
    def test_logs_its_events_as_json_lines(self, tmp_path: Path) -> None:
        workspace = make_workspace()
        config = tmp_path / "toolcage.toml"
        config.write_text(f'[shell]\nmode = "host"\nworkspace = "{workspace}"\n')
        socket_path = tmp_path / "run" / "shell.sock"
        socket_path.parent.mkdir(mode=0o700)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolcage.runtime",
                "sidecar",
                "--socket",
                str(socket_path),
                "--config",
                str(config),
                "--log-format",
                "json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        records = json_lines(stderr)
        assert [r["event"] for r in records] == ["sidecar.unsafe_host_mode", "sidecar.stopping"]
        assert records[0]["level"] == "warning"
        assert records[0]["logger"] == "toolcage.sidecar"
        assert records[1]["signal"] == "SIGTERM"
