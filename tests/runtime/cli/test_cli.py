"""The toolcage command, run as a real process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import pytest

from ...sidecar.conftest import make_workspace

COMMAND = [sys.executable, "-m", "toolcage.runtime"]


def toolcage(
    *args: str,
    stdin: str | bytes = "",
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdout: int | IO[Any] | None = subprocess.PIPE,
) -> subprocess.CompletedProcess[str]:
    data = stdin.decode("utf-8", "surrogateescape") if isinstance(stdin, bytes) else stdin
    return subprocess.run(
        [*COMMAND, *args],
        input=data,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        errors="surrogateescape",
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def answers(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toolcage.toml"
    path.write_text(text)
    return path


def default_sigint() -> None:
    """A child started from a background job inherits SIGINT ignored; a terminal's is not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class TestCli:
    def test_tools_lists_the_builtin_tools(self) -> None:
        done = toolcage("tools", "--json")
        assert done.returncode == 0, done.stderr
        names = [row["name"] for row in json.loads(done.stdout)]
        assert "tool_output_read" in names

    def test_tools_json_shows_each_tools_parameters(self) -> None:
        rows = {row["name"]: row for row in json.loads(toolcage("tools", "--json").stdout)}
        schema = rows["tool_output_read"]["parameters"]
        assert schema["type"] == "object"
        assert schema["required"] == ["handle"]
        assert all(row["parameters"]["type"] == "object" for row in rows.values())

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

    def test_send_media_goes_to_stderr_as_a_json_line(self, tmp_path: Path) -> None:
        (tmp_path / "workspace").mkdir()
        (tmp_path / "workspace" / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
        done = toolcage("call", "send_media", '{"path": "/workspace/chart.png"}', cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["status"] == "success"
        [line] = [json.loads(x) for x in done.stderr.splitlines() if x.startswith("{")]
        [attachment] = line["attachments"]
        assert (attachment["name"], attachment["media_type"]) == ("chart.png", "image/png")
        assert attachment["size"] == 72

    def test_broken_config_exits_2_naming_the_key(self, tmp_path: Path) -> None:
        done = toolcage("tools", "--config", str(config(tmp_path, "[limits]\nbogus = 1\n")))
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
        answered = answers(done)
        assert [a["error_type"] for a in answered] == ["not_found", "validation_error", "not_found"]
        assert answered[2]["tool"] == "tool_output_read"


class JsonlSession:
    """``toolcage call --jsonl`` fed one line at a time, each answer read before the next."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [*COMMAND, "call", "--jsonl", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            preexec_fn=default_sigint,
        )

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> tuple[int, str]:
        _, err = self.process.communicate(timeout=120)
        return self.process.returncode, err


@pytest.fixture
def jsonl_session(tmp_path: Path) -> Iterator[JsonlSession]:
    path = config(tmp_path, "[limits]\ntruncate_bytes = 1000\n")
    session = JsonlSession("--config", str(path), cwd=tmp_path)
    yield session
    if session.process.poll() is None:
        session.process.kill()
        session.process.communicate()


class TestTruncatedOutputOverJsonl:
    def test_tool_output_read_pages_through_the_whole_output(
        self, jsonl_session: JsonlSession
    ) -> None:
        content = "".join(f"line {n}: naïve café ✓\n" for n in range(2000))
        written = jsonl_session.call("file_write", path="/workspace/big.txt", content=content)
        assert written["status"] == "success", written
        shown = jsonl_session.call("file_read", path="/workspace/big.txt")
        assert shown["status"] == "success", shown
        match = re.search(r'handle "([^"]+)"', shown["result"])
        assert match is not None, shown["result"][-300:]
        pages: list[str] = []
        offset = 0
        while True:
            page = jsonl_session.call(
                "tool_output_read", handle=match.group(1), offset=offset, max_bytes=1000
            )
            assert page["status"] == "success", page
            pages.append(page["result"])
            offset = page["details"]["next_offset"]
            if page["details"]["eof"]:
                break
        assert "".join(pages) == content
        assert len(pages) > len(content.encode()) // 1000
        assert jsonl_session.close() == (0, "")


class TestBadInputNeverCrashes:
    def test_arguments_nested_thousands_deep(self) -> None:
        done = toolcage("call", "tool_output_read", "[" * 3000 + "]" * 3000)
        (answer,) = answers(done)
        assert done.returncode == 1
        assert answer["error_type"] == "validation_error"

    def test_an_integer_of_more_than_4300_digits(self) -> None:
        done = toolcage("call", "tool_output_read", '{"handle": ' + "7" * 5000 + "}")
        (answer,) = answers(done)
        assert answer["error_type"] == "validation_error"

    @pytest.mark.parametrize(
        ("name", "arguments", "problem"),
        [
            (b"tool_output_read", b'{"handle": "\xff\xfe"}', "the arguments"),
            (b"tool\xc3", b"{}", "the tool name"),
        ],
        ids=["arguments", "name"],
    )
    def test_invalid_utf8_in_argv(self, name: bytes, arguments: bytes, problem: str) -> None:
        done = subprocess.run(
            [*(os.fsencode(a) for a in COMMAND), b"call", name, arguments],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 1
        assert b"Traceback" not in done.stderr
        answer = json.loads(done.stdout)
        assert answer["error_type"] == "validation_error"
        assert answer["message"].startswith(f"{problem}: not valid UTF-8")

    def test_a_jsonl_batch_answers_every_line_and_goes_on(self) -> None:
        lines = [
            b'{"tool": "tool_output_read", "arguments": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            b'{"tool": "tool_output_read", "arguments": {"handle": ' + b"1" * 5000 + b"}}",
            b'{"tool": "tool_output_read", "arguments": {"handle": "\xff"}, "id": 3}',
            b'{"tool": 5, "arguments": {}, "id": "four"}',
            b'{"tool": "tool_output_read", "argument": {"handle": "x"}, "id": 5}',
            b"",
            b'{"tool": "tool_output_read", "arguments": {"handle": "\\ud800"}, "id": 7}',
            b'{"tool": "tool_output_read", "arguments": ' + b'{"a": ' * 3000 + b"1"
            + b"}" * 3000 + b', "id": 8}',
            b'["tool", "tool_output_read"]',
            b'{"tool": "tool_output_read", "arguments": {"handle": "out_0"}, "id": "last"}',
        ]  # fmt: skip
        done = toolcage("call", "--jsonl", stdin=b"\n".join(lines) + b"\n")
        assert done.returncode == 1
        answered = answers(done)
        assert [a["line"] for a in answered] == [1, 2, 3, 4, 5, 7, 8, 9, 10]
        assert [a.get("id") for a in answered] == [
            None,
            None,
            None,
            "four",
            5,
            7,
            None,
            None,
            "last",
        ]
        assert {a["error_type"] for a in answered[:-1]} == {"validation_error"}
        assert answered[-1]["error_type"] == "not_found"  # the batch went on to the end
        assert "nested too deeply" in answered[0]["message"]
        assert "more than 4,300 digits" in answered[1]["message"]
        assert "not valid UTF-8" in answered[2]["message"]
        assert answered[5]["field"] == "handle"

    def test_an_overlong_line_is_refused_without_being_kept(self, tmp_path: Path) -> None:
        path = config(tmp_path, "[limits]\nmax_argument_bytes = 1000\n")
        huge = json.dumps({"tool": "tool_output_read", "arguments": {"handle": "x" * 300_000}})
        after = json.dumps({"tool": "no_such_tool", "id": 2})
        done = toolcage("call", "--jsonl", "--config", str(path), stdin=f"{huge}\n{after}")
        first, second = answers(done)
        assert first["error_type"] == "validation_error"
        assert "over" in first["message"]
        assert (second["line"], second["id"], second["error_type"]) == (2, 2, "not_found")

    def test_jsonl_reads_a_regular_file_too(self, tmp_path: Path) -> None:
        calls = tmp_path / "calls.jsonl"
        calls.write_text(json.dumps({"tool": "no_such_tool", "id": "x"}) + "\n")
        with calls.open("rb") as source:
            done = subprocess.run(
                [*COMMAND, "call", "--jsonl"],
                stdin=source,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
        assert [(a["id"], a["line"]) for a in answers(done)] == [("x", 1)]

    @pytest.mark.parametrize(
        ("args", "stdin"),
        [(("tools",), ""), (("call", "--jsonl"), '{"tool": "no_such_tool"}\n' * 50)],
        ids=["tools", "jsonl"],
    )
    def test_a_closed_output_pipe_ends_quietly_with_141(
        self, args: Sequence[str], stdin: str
    ) -> None:
        read_end, write_end = os.pipe()
        os.close(read_end)  # `| head -1` that has already gone
        with os.fdopen(write_end, "w") as closed:
            done = toolcage(*args, stdin=stdin, stdout=closed)
        assert done.returncode == 141
        assert done.stderr == ""

    def test_a_full_disk_under_the_output_is_one_line(self) -> None:
        with open("/dev/full", "w") as full:
            done = toolcage("tools", stdout=full)
        assert done.returncode == 1
        assert done.stderr.strip() == "toolcage: error: [Errno 28] No space left on device"


def sleeping(marker: str) -> list[int]:
    """Pids of processes whose command line names ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class TestCtrlC:
    def test_during_a_call_exits_130_quietly_and_stops_the_command(self, tmp_path: Path) -> None:
        path = config(tmp_path, '[shell]\nmode = "host"\n')
        seconds = 3000 + os.getpid() % 1000  # a command line no other test has
        arguments = json.dumps({"command": f"touch started && sleep {seconds}"})
        process = subprocess.Popen(
            [*COMMAND, "call", "shell_exec", arguments, "--approve", "--config", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            preexec_fn=default_sigint,
        )
        while not (tmp_path / "workspace" / "started").exists():
            assert process.poll() is None, process.communicate()
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        assert (process.returncode, out, err) == (130, "", "")
        while sleeping(f"sleep\0{seconds}"):
            time.sleep(0.05)  # the sidecar's process group goes down with the runtime

    def test_while_waiting_for_input_exits_130_quietly(self, tmp_path: Path) -> None:
        session = JsonlSession(cwd=tmp_path)
        assert session.call("no_such_tool")["error_type"] == "not_found"
        session.process.send_signal(signal.SIGINT)  # it now waits for the next line
        out, err = session.process.communicate(timeout=120)
        assert (session.process.returncode, out, err) == (130, "", "")


class TestConfigCheckedAtLoad:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("a = " + "[" * 1000 + "]" * 1000, "nested too deeply"),
            ("[tools." + ".".join(["x"] * 40) + "]", "nested more than 16 levels deep"),
            ('[agents.reviewer]\ntools = ["file_read", "ghost"]\n',
             "agents.reviewer.tools: unknown tool 'ghost'"),
            ("[tools.file_raed]\ntimeout = 2\n",
             "tools.file_raed: unknown tool 'file_raed' (did you mean 'file_read'?)"),
            ('[approval]\nauto_approve = ["shell_exce"]\n',
             "approval.auto_approve: unknown tool 'shell_exce'"),
            ('[[mounts.areas]]\nhost = "data"\nguest = "/data"\ntiers = { read_only = "ro" }\n',
             "mounts.areas.0.host: "),
            ('[egress]\nprivate_exceptions = ["127.0.0.1:70000"]\n',
             "egress.private_exceptions.0: '127.0.0.1:70000'"),
            ('[egress.web_search]\nprovider = "searxng"\nbase_url = "http://s:99999"\n',
             "egress.web_search: base_url 'http://s:99999': Port out of range"),
        ],
        ids=["deep", "deep-keys", "agent", "override", "auto-approve", "mount", "port", "url"],
    )  # fmt: skip
    def test_a_config_mistake_exits_2_naming_its_key(
        self, tmp_path: Path, text: str, expected: str
    ) -> None:
        done = toolcage("tools", "--config", str(config(tmp_path, text)))
        assert "Traceback" not in done.stderr
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr

    def test_a_missing_mount_says_what_to_do(self, tmp_path: Path) -> None:
        text = '[[mounts.areas]]\nhost = "data"\nguest = "/data"\ntiers = { read_only = "ro" }\n'
        done = toolcage("tools", "--config", str(config(tmp_path, text)))
        assert f"{tmp_path / 'data'} does not exist (create it, or set create = true)" in (
            done.stderr
        )
        done = toolcage("tools", "--config", str(config(tmp_path, text + "create = true\n")))
        assert done.returncode == 0, done.stderr


def check_lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stdout.splitlines()
    return {line.split()[1]: line for line in lines}


CHECKS = ["config", "guests", "bubblewrap", "sidecar", "workspace", "egress", "state"]


class TestCheck:
    def test_a_ready_machine_passes_every_check(self) -> None:
        workspace = make_workspace()
        done = toolcage("check", "--config", str(config(workspace.parent, "")))
        lines = check_lines(done)
        assert list(lines) == CHECKS
        assert all(line.startswith("ok ") for line in lines.values()), done.stdout
        assert done.returncode == 0

    def test_a_broken_config_fails_first_and_skips_the_rest(self, tmp_path: Path) -> None:
        done = toolcage("check", "--config", str(config(tmp_path, "[limits]\nbogus = 1\n")))
        lines = check_lines(done)
        assert lines["config"].startswith("FAIL")
        assert "limits.bogus: unknown key" in lines["config"]
        assert all(lines[name].startswith("skip") for name in CHECKS[1:])
        assert done.returncode == 1

    def test_a_disabled_shell_skips_the_shell_checks(self, tmp_path: Path) -> None:
        done = toolcage("check", "--config", str(config(tmp_path, '[shell]\nmode = "disabled"\n')))
        lines = check_lines(done)
        assert [n for n, line in lines.items() if line.startswith("skip")] == CHECKS[2:5]
        assert done.returncode == 0, done.stdout

    def test_missing_bubblewrap_says_how_to_install_it(self, tmp_path: Path) -> None:
        workspace = make_workspace()
        env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on it
        done = toolcage("check", "--config", str(config(workspace.parent, "")), env=env)
        lines = check_lines(done)
        assert lines["bubblewrap"].startswith("FAIL")
        assert "install the 'bubblewrap' package" in lines["bubblewrap"]
        assert lines["sidecar"].startswith("FAIL")
        assert "bubblewrap (bwrap) is not installed" in lines["sidecar"]
        assert done.returncode == 1

    @pytest.mark.skipif(os.geteuid() != 0, reason="commands run as another uid only under root")
    def test_a_root_owned_workspace_is_made_writable_for_the_sandbox_uid(self) -> None:
        workspace = make_workspace()
        os.chown(workspace, 0, 0)
        workspace.chmod(0o755)
        done = toolcage("check", "--config", str(config(workspace.parent, "")))
        lines = check_lines(done)
        assert lines["workspace"].startswith("ok"), lines["workspace"]
        assert (workspace.stat().st_uid, workspace.stat().st_mode & 0o7) == (0, 0o5)
        assert done.returncode == 0

    def test_a_workspace_the_sandbox_uid_cannot_write_says_how_to_fix_it(self) -> None:
        workspace = make_workspace()
        os.chown(workspace, 0, 0)
        workspace.chmod(0o755)
        immutable = subprocess.run(["chattr", "+i", str(workspace)], check=False)
        if immutable.returncode != 0:
            pytest.skip("no immutable directories here")
        try:
            done = toolcage("check", "--config", str(config(workspace.parent, "")))
        finally:
            subprocess.run(["chattr", "-i", str(workspace)], check=True)
        lines = check_lines(done)
        assert lines["sidecar"].startswith("ok")
        assert lines["workspace"].startswith("FAIL")
        assert f"chown -R 65534 {workspace}" in lines["workspace"]
        assert done.returncode == 1
