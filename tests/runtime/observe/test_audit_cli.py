"""``toolcage audit tail|grep``, run as a real process on a log real calls wrote."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest
from toolcage.runtime.cli._audit import FOLLOW_POLL_SECONDS
from toolcage.runtime.observe._sinks import rotated

from ..cli.test_cli import COMMAND, default_sigint, toolcage
from .test_audit import MOUNTS

WRITER = Path(__file__).with_name("audit_writer.py")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config with an audit log of five calls: three listings, two refused reads."""
    root = tmp_path_factory.mktemp("audit")
    (root / "workspace").mkdir()
    (root / "toolcage.toml").write_text(MOUNTS + '[audit]\npath = "audit.jsonl"\n')
    for number in range(3):
        done = call(root, "file_list", {"path": "/workspace", "depth": number + 1})
        assert done.returncode == 0, done.stderr
    for path in ("/etc/passwd", "/etc/shadow"):
        assert call(root, "file_read", {"path": path}).returncode == 1
    return root


def call(root: Path, name: str, arguments: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    config = str(root / "toolcage.toml")
    return toolcage("call", name, json.dumps(arguments), "--config", config, cwd=root)


def lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


class TestTail:
    def test_the_last_records(self, site: Path) -> None:
        done = toolcage("audit", "tail", "-n", "2", "--config", str(site / "toolcage.toml"))
        assert done.returncode == 0
        assert [r["arguments"]["path"] for r in lines(done)] == ["/etc/passwd", "/etc/shadow"]

    def test_ten_by_default_and_no_more_than_there_are(self, site: Path) -> None:
        done = toolcage("audit", "tail", "--config", str(site / "toolcage.toml"))
        assert len(lines(done)) == 5

    def test_follow_prints_new_records(self, site: Path) -> None:
        assert follow(site, 1) == ["get_current_time"]

    def test_follow_goes_on_across_rotations(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        audit = '[audit]\npath = "audit.jsonl"\nrotate_bytes = 300\nkeep = 1\n'
        (tmp_path / "toolcage.toml").write_text(MOUNTS + audit)
        call(tmp_path, "get_current_time", {})
        assert follow(tmp_path, 3) == ["get_current_time"] * 3
        assert (tmp_path / "audit.jsonl.1").exists()

    def test_follow_reads_every_file_rotated_between_two_polls(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        audit = '[audit]\npath = "audit.jsonl"\nrotate_bytes = 300\nkeep = 100\n'
        (tmp_path / "toolcage.toml").write_text(MOUNTS + audit)
        call(tmp_path, "get_current_time", {})
        with following(tmp_path) as stream:
            # One process writes 40 records, a file each, faster than the follower polls.
            done = subprocess.run(
                [sys.executable, str(WRITER), str(tmp_path / "toolcage.toml"), "w", "40"],
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, done.stderr
            texts = [json.loads(stream.readline())["arguments"]["text"] for _ in range(40)]
        assert texts == [f"w-{n}" for n in range(40)]
        assert (tmp_path / "audit.jsonl.39").exists()

    def test_follow_waits_for_a_rotation_under_way(self, tmp_path: Path) -> None:
        """A writer holds the log's lock while it renames ``.N-1`` to ``.N`` .. the log to
        ``.1``. A follower that listed the rotated files in the middle of that would stop
        at the number just moved up and lose the files after it."""
        (tmp_path / "workspace").mkdir()
        audit = '[audit]\npath = "audit.jsonl"\nrotate_bytes = 100000\nkeep = 100\n'
        (tmp_path / "toolcage.toml").write_text(MOUNTS + audit)
        call(tmp_path, "get_current_time", {})
        log = tmp_path / "audit.jsonl"

        def record(text: str) -> bytes:
            return json.dumps({"type": "call", "arguments": {"text": text}}).encode() + b"\n"

        with following(tmp_path) as stream:
            lock = os.open(tmp_path / "audit.jsonl.lock", os.O_RDWR)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)
                with open(log, "ab") as held:  # the log the follower holds
                    held.write(record("a"))
                os.replace(log, rotated(log, 1))
                (tmp_path / "b").write_bytes(record("b"))
                os.replace(tmp_path / "b", log)
                os.replace(rotated(log, 1), rotated(log, 2))
                os.replace(log, rotated(log, 1))
                (tmp_path / "c").write_bytes(record("c"))
                os.replace(tmp_path / "c", log)
                # Half of the next rotation: ".2" moved up, ".1" not yet.
                os.replace(rotated(log, 2), rotated(log, 3))
                time.sleep(20 * FOLLOW_POLL_SECONDS)  # the follower polls meanwhile
                os.replace(rotated(log, 1), rotated(log, 2))
                os.replace(log, rotated(log, 1))
                (tmp_path / "d").write_bytes(record("d"))
                os.replace(tmp_path / "d", log)
            finally:
                os.close(lock)
            texts = [json.loads(stream.readline())["arguments"]["text"] for _ in range(4)]
        assert texts == ["a", "b", "c", "d"]


def follow(site: Path, calls: int) -> list[str]:
    """The tools of the records ``tail -n 1 --follow`` prints after the last one while
    ``calls`` calls are made."""
    tools = []
    with following(site) as stream:
        for _ in range(calls):
            call(site, "get_current_time", {})
            tools.append(json.loads(stream.readline())["tool"])
    return tools


@contextmanager
def following(site: Path) -> Iterator[IO[str]]:
    """The output of ``tail -n 1 --follow``, once it printed the last record (which says
    the file is open); interrupted at the end."""
    config = str(site / "toolcage.toml")
    with subprocess.Popen(
        [*COMMAND, "audit", "tail", "-n", "1", "--follow", "--config", config],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    ) as follower:
        assert follower.stdout is not None
        try:
            assert json.loads(follower.stdout.readline())["type"] == "call"
            yield follower.stdout
        finally:
            follower.send_signal(signal.SIGINT)
            assert follower.wait(timeout=60) == 130
            assert follower.stderr is not None
            assert "Traceback" not in follower.stderr.read()


class TestGrep:
    def test_filters(self, site: Path) -> None:
        config = str(site / "toolcage.toml")
        done = toolcage(
            "audit", "grep", "passwd|shadow", "--status", "permission_denied", "--config", config
        )
        assert done.returncode == 0
        found = lines(done)
        assert [r["tool"] for r in found] == ["file_read", "file_read"]
        done = toolcage("audit", "grep", ".", "--tool", "file_list", "--config", config)
        assert [r["arguments"]["depth"] for r in lines(done)] == [1, 2, 3]
        done = toolcage(
            "audit", "grep", ".", "--user", "local", "--status", "success", "--config", config
        )
        assert {r["tool"] for r in lines(done)} >= {"file_list"}

    def test_no_match_exits_1(self, site: Path) -> None:
        config = str(site / "toolcage.toml")
        done = toolcage("audit", "grep", "no such text", "--config", config)
        assert (done.returncode, done.stdout) == (1, "")

    def test_a_bad_pattern_is_bad_usage(self, site: Path) -> None:
        done = toolcage("audit", "grep", "(", "--config", str(site / "toolcage.toml"))
        assert done.returncode == 2
        assert done.stderr.startswith("error: PATTERN is not a regular expression")

    def test_a_config_without_a_log_is_bad_usage(self, tmp_path: Path) -> None:
        (tmp_path / "toolcage.toml").write_text("")
        done = toolcage("audit", "tail", "--config", str(tmp_path / "toolcage.toml"))
        assert done.returncode == 2
        assert "names no audit log ([audit] path)" in done.stderr
