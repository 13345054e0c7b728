"""``toolcage serve`` and ``toolcage call --server``, run as real processes.

The client must print what the in-process call prints, refuse (exit 2) rather than answer
with another config, and the server must let in its own uid only, survive bad and vanished
clients, and leave nothing behind on SIGTERM.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...adversarial.test_mcp_serve import NOBODY, as_root_only, as_uid
from ...sidecar.conftest import scratch
from .test_cli import COMMAND, answers, sleeping, toolcage

HOST_SHELL = '[shell]\nmode = "host"\n'


class Server:
    """``toolcage serve`` running as a process."""

    def __init__(self, process: subprocess.Popen[str], socket_path: Path) -> None:
        self.process = process
        self.socket = socket_path

    def stop(self) -> tuple[int, str]:
        """SIGTERM; its exit status and what it wrote to stderr after its banner."""
        if self.process.returncode is None:
            self.process.terminate()
        stderr = self.process.communicate(timeout=120)[1]
        return self.process.returncode, stderr


@contextlib.contextmanager
def serving(cwd: Path, *args: str, socket_dir: Path | None = None) -> Iterator[Server]:
    """``toolcage serve ARGS --socket DIR/serve.sock`` in ``cwd``, once it listens."""
    path = (socket_dir or cwd) / "serve.sock"
    process = subprocess.Popen(
        [*COMMAND, "serve", *args, "--socket", str(path)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    before: list[str] = []
    while not (line := process.stderr.readline()).startswith("toolcage serve: listening"):
        assert line, f"it stopped: {''.join(before)}"
        before.append(line)
    server = Server(process, path)
    try:
        yield server
    finally:
        if process.returncode is None:
            process.kill()
            process.communicate()


def call(
    server: Server, *args: str, cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return toolcage("call", *args, "--server", str(server.socket), cwd=cwd, stdin=stdin)


def workspace_file(cwd: Path, name: str = "a.md", text: str = "hello\n") -> None:
    (cwd / "workspace").mkdir(exist_ok=True)
    (cwd / "workspace" / name).write_text(text)


def exchange(path: Path, *lines: dict[str, Any]) -> list[dict[str, Any]]:
    """Send ``lines`` on a raw connection to ``path``; every line it answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(120)
        sock.connect(str(path))
        if lines:
            sock.sendall(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


class TestCallsThroughTheServer:
    def test_prints_what_the_in_process_call_prints(self, tmp_path: Path) -> None:
        workspace_file(tmp_path)
        read = ("file_read", '{"path": "/workspace/a.md"}')
        missing = ("file_read", '{"path": "/workspace/none.md"}')
        in_process = [toolcage("call", *c, cwd=tmp_path) for c in (read, missing)]
        with serving(tmp_path) as server:
            remote = [call(server, *c, cwd=tmp_path) for c in (read, missing)]
            env = {**os.environ, "TOOLCAGE_SERVER": str(server.socket)}
            by_env = subprocess.run(
                [*COMMAND, "call", *read], cwd=tmp_path, env=env, capture_output=True, text=True
            )
            status, stderr = server.stop()
        for here, there in zip(in_process, remote, strict=True):
            assert there.returncode == here.returncode
            assert there.stderr == here.stderr
            mine, theirs = answers(here)[0], answers(there)[0]
            del mine["duration_ms"], theirs["duration_ms"]
            assert theirs == mine
        assert [r.returncode for r in remote] == [0, 1]
        assert remote[0].stderr == "Read a.md (1 line)\n"
        assert json.loads(by_env.stdout)["result"] == "hello\n"
        assert (status, stderr) == (0, "")

    def test_usage_errors_exit_2(self, tmp_path: Path) -> None:
        with serving(tmp_path) as server:
            no_name = call(server, cwd=tmp_path)
            both = call(server, "file_read", "--jsonl", cwd=tmp_path)
            bad_json = call(server, "file_read", "{", cwd=tmp_path)
        assert no_name.returncode == 2
        assert "call needs a tool NAME" in no_name.stderr
        assert both.returncode == 2
        assert bad_json.returncode == 1  # a tool error, as in-process
        assert answers(bad_json)[0]["error_type"] == "validation_error"

    def test_jsonl_many_lines_a_bad_one_answered_and_counted(self, tmp_path: Path) -> None:
        workspace_file(tmp_path)
        lines = [
            json.dumps({"tool": "file_read", "arguments": {"path": "/workspace/a.md"}, "id": i})
            for i in range(50)
        ]
        lines.insert(10, "not json")
        with serving(tmp_path) as server:
            done = call(server, "--jsonl", cwd=tmp_path, stdin="\n".join(lines))
        replies = answers(done)
        assert done.returncode == 1
        assert len(replies) == 51
        assert replies[10]["error_type"] == "validation_error"
        assert replies[10]["line"] == 11
        ok = [r for r in replies if r["status"] == "success"]
        assert [r["id"] for r in ok] == list(range(50))

    def test_raw_connections_speak_call_jsonl(self, tmp_path: Path) -> None:
        workspace_file(tmp_path)
        line = {"tool": "file_read", "arguments": {"path": "/workspace/a.md"}, "id": "x"}
        with serving(tmp_path) as server:
            first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            first.connect(str(server.socket))  # held open, idle, while the other is served
            with first:
                replies = exchange(server.socket, line, {"tool": "nope"}, line)
        assert [r.get("id") for r in replies] == ["x", None, "x"]
        assert [r["status"] for r in replies] == ["success", "error", "success"]
        assert replies[1]["line"] == 2

    def test_a_malformed_call_is_answered_and_the_connection_goes_on(self, tmp_path: Path) -> None:
        workspace_file(tmp_path)
        read = {"name": "file_read", "arguments": '{"path": "/workspace/a.md"}'}
        with serving(tmp_path) as server:
            replies = exchange(server.socket, {"call": {"name": 1}}, {"call": "x"}, {"call": read})
        assert [r["envelope"]["status"] for r in replies] == ["error", "error", "success"]
        assert "call must be" in replies[0]["envelope"]["message"]
        assert replies[2]["display"] == "Read a.md (1 line)"

    def test_two_clients_at_once(self, tmp_path: Path) -> None:
        config = tmp_path / "toolcage.toml"
        config.write_text(HOST_SHELL)
        workspace_file(tmp_path)
        seconds = 2000 + os.getpid() % 1000
        slow = json.dumps({"command": f"touch started && sleep {seconds / 1000:.3f}"})
        with serving(tmp_path, "--config", str(config), "--approve") as server:
            args = ["--config", str(config), "--approve", "--server", str(server.socket)]
            first = subprocess.Popen(
                [*COMMAND, "call", "shell_exec", slow, *args],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            while not (tmp_path / "workspace" / "started").exists():
                assert first.poll() is None, first.communicate()
                time.sleep(0.02)
            # the first call is still running; the second is answered beside it
            second = call(
                server,
                "file_read",
                '{"path": "/workspace/a.md"}',
                "--config",
                str(config),
                "--approve",
                cwd=tmp_path,
            )
            out, _ = first.communicate(timeout=120)
        assert second.returncode == 0, second.stderr
        assert first.returncode == 0
        assert json.loads(out)["status"] == "success"


class TestRefusals:
    def test_no_server_names_the_path(self, tmp_path: Path) -> None:
        done = toolcage("call", "file_read", "{}", "--server", str(tmp_path / "none.sock"))
        assert done.returncode == 2
        assert f"--server {tmp_path / 'none.sock'}: no toolcage serve answers there" in done.stderr
        assert done.stdout == ""

    def test_a_server_of_another_kind_is_named_not_trusted(self, tmp_path: Path) -> None:
        path = tmp_path / "http.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(str(path))
            listener.listen()
            with fake_server(listener, b"HTTP/1.1 400 Bad Request\r\n\r\n"):
                done = toolcage("call", "file_read", "{}", "--server", str(path))
        assert done.returncode == 2
        assert "not a toolcage serve socket (it said 'HTTP/1.1 400 Bad Request')" in done.stderr
        assert (done.stdout, "Traceback" in done.stderr) == ("", False)

    def test_another_config_is_refused(self, tmp_path: Path) -> None:
        config = tmp_path / "toolcage.toml"
        config.write_text(HOST_SHELL)
        other = tmp_path / "other.toml"
        other.write_text(HOST_SHELL)
        with serving(tmp_path, "--config", str(config)) as server:
            defaults = call(server, "file_read", "{}", cwd=tmp_path)
            another = call(server, "file_read", "{}", "--config", str(other), cwd=tmp_path)
            approving = call(
                server, "file_read", "{}", "--config", str(config), "--approve", cwd=tmp_path
            )
            same = call(server, "tool_output_read", "{}", "--config", "toolcage.toml", cwd=tmp_path)
        for done in (defaults, another, approving):
            assert (done.returncode, done.stdout) == (2, ""), done.stderr
            assert f"--server {server.socket}: refused: this server" in done.stderr
        assert str(other) in another.stderr
        assert "built-in defaults" in defaults.stderr
        assert "--approve" in approving.stderr
        assert same.returncode == 1  # served: a tool error, not a refusal
        assert answers(same)[0]["error_type"] == "validation_error"

    def test_a_changed_config_is_refused(self, tmp_path: Path) -> None:
        config = tmp_path / "toolcage.toml"
        config.write_text(HOST_SHELL)
        with serving(tmp_path, "--config", str(config)) as server:
            before = call(server, "tool_output_read", "{}", "--config", str(config), cwd=tmp_path)
            config.write_text(HOST_SHELL + "# edited\n")
            after = call(server, "tool_output_read", "{}", "--config", str(config), cwd=tmp_path)
        assert before.returncode == 1
        assert after.returncode == 2
        assert f"the config {config}: it changed since the server started" in after.stderr

    def test_a_directory_others_may_write_is_refused(self, tmp_path: Path) -> None:
        shared = tmp_path / "shared"
        shared.mkdir()
        shared.chmod(0o1777)
        done = toolcage("serve", "--socket", str(shared / "s.sock"), cwd=tmp_path)
        assert done.returncode == 2
        assert f"others may write to {shared}" in done.stderr
        assert "Traceback" not in done.stderr


class TestLifetime:
    def test_sigterm_leaves_no_socket_and_no_process(self, tmp_path: Path) -> None:
        with serving(tmp_path) as server:
            assert server.socket.exists()
            status, stderr = server.stop()
        assert (status, stderr) == (0, "")
        assert not server.socket.exists()
        assert not sleeping(str(server.socket))  # no process of it is left

    def test_sigterm_lets_the_call_in_flight_finish(self, tmp_path: Path) -> None:
        config = tmp_path / "toolcage.toml"
        config.write_text(HOST_SHELL)
        (tmp_path / "workspace").mkdir()
        slow = json.dumps({"command": "touch started && sleep 1 && echo done"})
        with serving(tmp_path, "--config", str(config), "--approve") as server:
            args = ["--config", str(config), "--approve", "--server", str(server.socket)]
            client = subprocess.Popen(
                [*COMMAND, "call", "shell_exec", slow, *args],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            while not (tmp_path / "workspace" / "started").exists():
                assert client.poll() is None, client.communicate()
                time.sleep(0.02)
            status, stderr = server.stop()
            out, err = client.communicate(timeout=120)
        assert (status, "Traceback" in stderr) == (0, False)
        assert client.returncode == 0, err
        assert "done" in json.loads(out)["result"]
        assert not server.socket.exists()

    def test_a_client_killed_mid_call_leaves_the_server_serving(self, tmp_path: Path) -> None:
        config = tmp_path / "toolcage.toml"
        config.write_text(HOST_SHELL)
        workspace_file(tmp_path)
        slow = json.dumps({"command": "touch started && sleep 1"})
        with serving(tmp_path, "--config", str(config), "--approve") as server:
            args = ["--config", str(config), "--approve", "--server", str(server.socket)]
            client = subprocess.Popen(
                [*COMMAND, "call", "shell_exec", slow, *args],
                cwd=tmp_path,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            while not (tmp_path / "workspace" / "started").exists():
                assert client.poll() is None
                time.sleep(0.02)
            client.kill()
            client.wait()
            again = [
                call(server, "file_read", '{"path": "/workspace/a.md"}', *args[:3], cwd=tmp_path)
                for _ in range(3)
            ]
            status, stderr = server.stop()
        assert [done.returncode for done in again] == [0, 0, 0]
        assert (status, "Traceback" in stderr) == (0, False)


@as_root_only
class TestOnlyItsUid:
    def test_another_uid_is_refused_by_its_credentials(self) -> None:
        directory = scratch("serve-socket-")
        directory.chmod(0o711)
        hello = {"hello": {"config": None, "cwd": str(directory), "approve": False}}
        with serving(directory) as server:
            as_them = as_uid(NOBODY, lambda: str(exchange(server.socket, hello)))
            server.socket.chmod(0o666)  # only SO_PEERCRED stands in the way now
            # it answers before reading a byte: this peer sends nothing
            refused = as_uid(NOBODY, lambda: json.dumps(exchange(server.socket)))
            as_us = exchange(server.socket, hello)
            status, stderr = server.stop()
        assert as_them == "failed: PermissionError", as_them
        assert json.loads(refused) == [{"refused": f"peer uid {NOBODY} is not allowed"}]
        assert as_us == [{"welcome": {"line": 1}}]
        assert status == 0
        assert f"refused a connection from uid {NOBODY}" in stderr

    def test_a_server_of_another_uid_is_not_believed(self) -> None:
        """Whoever bound the path first (another account, in a shared directory) could
        answer with results of its making: the client asks the kernel who answers."""
        directory = scratch("serve-socket-")
        directory.chmod(0o1777)
        path = directory / "serve.sock"
        fake = b'{"welcome": {}}\n{"envelope": {"status": "success", "result": "forged"}}\n'
        ready, go = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: a listener of uid 65534
            try:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                    listener.bind(str(path))
                    listener.listen()
                    os.write(go, b"!")
                    listener.settimeout(120)
                    conn, _ = listener.accept()
                    with conn:
                        conn.sendall(fake)
            finally:
                os._exit(0)
        os.close(go)
        try:
            assert os.read(ready, 1) == b"!"
            done = toolcage("call", "file_read", "{}", "--server", str(path))
        finally:
            os.close(ready)
            with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as nudge:
                nudge.connect(str(path))  # lets the child end, if the client never came
            os.waitpid(pid, 0)
        assert done.returncode == 2
        assert f"the server runs as uid {NOBODY}, not as this user" in done.stderr
        assert "forged" not in done.stdout


@contextlib.contextmanager
def fake_server(listener: socket.socket, reply: bytes) -> Iterator[None]:
    """A thread answering one connection of ``listener`` with ``reply``, then closing."""

    def serve() -> None:
        listener.settimeout(120)
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                conn.sendall(reply)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def test_the_client_imports_no_heavy_module() -> None:
    probe = (
        "import sys; from toolcage.runtime.cli import _client; "
        "print(sorted(m for m in ('pydantic', 'wasmtime', 'anyio', 'toolcage.policies') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
