"""The wire protocol against the real daemon: what a broken or foreign peer gets."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ShellConfig
from toolcage.sidecar._protocol import (
    MAX_FRAME_BYTES,
    ProtocolError,
    decode_body,
    encode_frame,
    hello,
)

from .conftest import TEST_LIMITS, Daemon, make_workspace, read_frame, start_daemon, stop_daemon


def ping(sock: socket.socket, request_id: int = 1) -> dict[str, Any] | None:
    sock.sendall(encode_frame({"id": request_id, "op": "ping"}))
    return read_frame(sock)


def alive(daemon: Daemon) -> bool:
    """A fresh connection still gets through the handshake and a ping."""
    with daemon.handshake() as sock:
        reply = ping(sock)
    return daemon.process.poll() is None and reply is not None and reply["ok"] is True


class TestFrameCodec:
    def test_round_trip(self) -> None:
        frame = encode_frame({"id": 1, "op": "ping", "text": "é"})
        (length,) = struct.unpack(">I", frame[:4])
        assert length == len(frame) - 4
        assert decode_body(frame[4:]) == {"id": 1, "op": "ping", "text": "é"}

    @pytest.mark.parametrize("body", [b"{", b"[1, 2]", b"\xff\xfe", b'"text"'])
    def test_a_body_that_is_not_an_object_is_a_recoverable_error(self, body: bytes) -> None:
        with pytest.raises(ProtocolError) as caught:
            decode_body(body)
        assert caught.value.code == "bad_frame"
        assert not caught.value.fatal

    def test_encoding_refuses_an_oversized_message(self) -> None:
        with pytest.raises(ValueError, match="exceeds"):
            encode_frame({"blob": "x" * MAX_FRAME_BYTES})


class TestHandshake:
    def test_hello_names_version_and_pid(self, daemon: Daemon) -> None:
        with daemon.connect() as sock:
            sock.sendall(
                encode_frame({"type": "hello", "protocol": "toolcage-shell", "version": 1})
            )
            reply = read_frame(sock)
        assert reply is not None
        assert reply["type"] == "hello"
        assert reply["version"] == 1
        assert reply["pid"] == daemon.pid

    def test_another_version_is_refused(self, daemon: Daemon) -> None:
        with daemon.connect() as sock:
            sock.sendall(
                encode_frame({"type": "hello", "protocol": "toolcage-shell", "version": 2})
            )
            reply = read_frame(sock)
            assert read_frame(sock) is None  # and the connection is closed
        assert reply is not None
        assert reply["error"]["code"] == "unsupported_version"
        assert alive(daemon)

    def test_a_request_before_hello_is_refused(self, daemon: Daemon) -> None:
        with daemon.connect() as sock:
            reply = ping(sock)
            assert read_frame(sock) is None
        assert reply is not None
        assert reply["error"]["code"] == "bad_hello"

    def test_a_non_protocol_client_is_refused_and_the_daemon_survives(self, daemon: Daemon) -> None:
        with daemon.connect() as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            reply = read_frame(sock)
            assert read_frame(sock) is None
        assert reply is not None
        assert reply["ok"] is False
        assert reply["error"]["code"] == "frame_too_large"
        assert alive(daemon)


class TestBrokenFrames:
    def test_malformed_json_gets_an_error_and_the_connection_goes_on(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            body = b'{"id": 1, "op": '
            sock.sendall(struct.pack(">I", len(body)) + body)
            reply = read_frame(sock)
            after = ping(sock, 2)
        assert reply == {"id": None, "ok": False, "error": reply["error"]}  # type: ignore[index]
        assert reply["error"]["code"] == "bad_frame"
        assert after is not None
        assert after["id"] == 2
        assert after["ok"] is True

    def test_an_oversized_frame_gets_an_error_and_a_close(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            sock.sendall(struct.pack(">I", MAX_FRAME_BYTES + 1) + b"{}")
            reply = read_frame(sock)
            assert read_frame(sock) is None
        assert reply is not None
        assert reply["error"]["code"] == "frame_too_large"
        assert alive(daemon)

    def test_an_empty_frame_is_refused(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            sock.sendall(struct.pack(">I", 0))
            reply = read_frame(sock)
        assert reply is not None
        assert reply["error"]["code"] == "frame_too_large"

    def test_a_truncated_frame_gets_an_error(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            sock.sendall(struct.pack(">I", 100) + b'{"id": 1')
            sock.shutdown(socket.SHUT_WR)
            reply = read_frame(sock)
        assert reply is not None
        assert reply["error"]["code"] == "truncated_frame"
        assert alive(daemon)

    def test_a_truncated_header_gets_an_error(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            sock.sendall(b"\x00\x00")
            sock.shutdown(socket.SHUT_WR)
            reply = read_frame(sock)
        assert reply is not None
        assert reply["error"]["code"] == "truncated_frame"

    @pytest.mark.parametrize(
        ("message", "code"),
        [
            ({"id": 1, "op": "format_disk"}, "unknown_op"),
            ({"op": "ping"}, "bad_request"),
            ({"id": "1", "op": "ping"}, "bad_request"),
            ({"id": 1, "op": "exec", "session": "s", "command": ""}, "bad_request"),
            (
                {"id": 1, "op": "exec", "session": "s", "command": "true", "timeout": -1},
                "bad_request",
            ),
            (
                {"id": 1, "op": "exec", "session": "s", "command": "true", "timeout": 1e9},
                "bad_request",
            ),
            ({"id": 1, "op": "exec", "session": 5, "command": "true"}, "bad_request"),
            ({"id": 1, "op": "poll", "session": "s", "job": "job-nope"}, "no_job"),
            ({"id": 1, "op": "close", "session": "never-opened"}, "no_session"),
        ],
    )
    def test_bad_requests_are_answered_with_their_code(
        self, daemon: Daemon, message: dict[str, object], code: str
    ) -> None:
        with daemon.handshake() as sock:
            sock.sendall(encode_frame(message))
            reply = read_frame(sock)
        assert reply is not None
        assert reply["ok"] is False
        assert reply["error"]["code"] == code

    def test_many_garbage_frames_in_a_row(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            for i in range(50):
                body = json.dumps([i]).encode()
                sock.sendall(struct.pack(">I", len(body)) + body)
            codes = [read_frame(sock)["error"]["code"] for _ in range(50)]  # type: ignore[index]
        assert set(codes) == {"bad_frame"}
        assert alive(daemon)


class TestFrameBoundaries:
    def test_frames_sent_in_one_write_are_each_answered(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            sock.sendall(b"".join(encode_frame({"id": i, "op": "ping"}) for i in (1, 2, 3)))
            replies = [read_frame(sock) for _ in range(3)]
        assert sorted(r["id"] for r in replies if r is not None and r["ok"]) == [1, 2, 3]

    def test_a_frame_written_a_byte_at_a_time_is_read_whole(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            for byte in encode_frame({"id": 7, "op": "ping"}):
                sock.sendall(bytes([byte]))
            reply = read_frame(sock)
        assert reply is not None
        assert reply["id"] == 7
        assert reply["ok"] is True

    def test_a_frame_after_a_bad_one_in_the_same_write_is_answered(self, daemon: Daemon) -> None:
        with daemon.handshake() as sock:
            body = b"[1]"
            sock.sendall(
                struct.pack(">I", len(body)) + body + encode_frame({"id": 2, "op": "ping"})
            )
            first, second = read_frame(sock), read_frame(sock)
        assert first is not None
        assert first["error"]["code"] == "bad_frame"
        assert second is not None
        assert second["id"] == 2


class TestPeerCredentials:
    @pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
    def test_another_uid_cannot_even_reach_the_socket(self, daemon: Daemon) -> None:
        outcome = as_nobody(daemon.socket_path)
        assert outcome.startswith("connect failed: PermissionError"), outcome

    @pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another uid")
    def test_another_uid_is_refused_by_its_credentials(self) -> None:
        workspace = make_workspace()
        running = start_daemon(ShellConfig(workspace=workspace, limits=TEST_LIMITS))
        try:
            # open the directory and socket up, so only SO_PEERCRED stands in the way
            running.socket_path.parent.chmod(0o711)
            running.socket_path.chmod(0o666)
            outcome = as_nobody(running.socket_path)
            log = running.log.read_text()
        finally:
            stop_daemon(running)
        assert outcome.startswith("reply: ")
        reply = json.loads(outcome.removeprefix("reply: "))
        assert reply["ok"] is False
        assert reply["error"]["code"] == "forbidden"
        assert "uid 65534" in reply["error"]["message"]
        assert "refused a connection from uid 65534" in log


def as_nobody(socket_path: Path) -> str:
    """Connect as uid 65534 from a forked child; what happened, as text."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(5)
                sock.connect(str(socket_path))
            except OSError as exc:
                os.write(write_fd, f"connect failed: {type(exc).__name__}".encode())
            else:
                # the daemon may answer (and close) before the hello is even sent
                with contextlib.suppress(OSError):
                    sock.sendall(encode_frame(hello()))
                try:
                    header = sock.recv(4)
                    (length,) = struct.unpack(">I", header)
                    body = b""
                    while len(body) < length:
                        body += sock.recv(length - len(body))
                    os.write(write_fd, b"reply: " + body)
                except Exception as exc:
                    os.write(write_fd, f"read failed: {exc!r}".encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    while chunk := os.read(read_fd, 65536):
        chunks.append(chunk)
    os.close(read_fd)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()
