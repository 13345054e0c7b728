"""``toolcage call ... --server PATH``: the call sent to a running ``toolcage serve``.

A whole ``toolcage call`` process spends most of its life importing and building what a
call needs (pydantic's config models, wasmtime's engine); a host that calls the command
often can start ``toolcage serve`` once and point its calls at it, with ``--server PATH``
or ``TOOLCAGE_SERVER=PATH``. This module is all such a call loads: the standard library
only (``toolcage.runtime``'s package imports its names on first use, and
:func:`toolcage.runtime.cli.main` comes here before it loads the rest of the command).

What it prints is what the in-process call prints -- the envelope on stdout, the display
line on stderr, exit 0, 1 on a tool error (``--jsonl``: if any call failed) -- because the
server builds both with the same code. Before any call the client says which config it
means (the resolved ``--config`` path, or the built-in defaults and the directory they
resolve against) and whether it approves; a server serving another config, one whose config
file changed since it started, or one with another approval setting refuses, and so does
an absent one: each is a usage error (exit 2) naming the path, never a silent fallback to
another config or to an in-process call. Nor does it trust whoever listens at the path: a
server must run as the client's own uid or as root (``SO_PEERCRED``), or another account
that bound the path first could answer with results of its making. The wire format is in
:mod:`._serve`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
from collections.abc import Sequence
from typing import Any

from .._unix_socket import peer_uid
from ._json_out import write_json_line

SERVER_ENV = "TOOLCAGE_SERVER"
EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2
_MAX_ANSWER = 64 * 1024 * 1024
"""Bytes an answer line may take (envelopes are bounded by the server's output limits)."""


def server_path(argv: Sequence[str]) -> str | None:
    """The server a ``call`` command line is for (``--server`` or ``$TOOLCAGE_SERVER``), or
    ``None`` when it runs in-process. Only a ``call`` goes to a server."""
    if not argv or argv[0] != "call":
        return None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--server" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--server="):
            return arg.removeprefix("--server=")
    return os.environ.get(SERVER_ENV) or None


def config_identity(config: str | None) -> dict[str, Any]:
    """What a call means by its config: the file's resolved path, or (``None``) the built-in
    defaults, whose ``./workspace`` resolves against the working directory."""
    if config is None:
        return {"config": None, "cwd": os.getcwd()}
    return {"config": os.path.realpath(config), "cwd": None}


def run_client(argv: Sequence[str]) -> int:
    """Run ``toolcage call ARGS`` against its server; the exit status."""
    args = _parser().parse_args(list(argv)[1:])
    path = args.server or os.environ.get(SERVER_ENV, "")
    if args.jsonl and args.name is not None:
        print("error: --jsonl reads calls from stdin; give no NAME", file=sys.stderr)
        return EXIT_USAGE
    if not args.jsonl and args.name is None:
        print("error: call needs a tool NAME and its JSON arguments (or --jsonl)", file=sys.stderr)
        return EXIT_USAGE
    try:
        sock = _connect(path)
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with sock:
        lines = sock.makefile("rb")
        try:
            hello = {"hello": {**config_identity(args.config), "approve": args.approve}}
            _send(path, sock, lines, hello)
            _expect_welcome(path, lines)
            if args.jsonl:
                return _relay_lines(path, sock, lines)
            _send(path, sock, lines, {"call": {"name": args.name, "arguments": args.arguments}})
            reply = _read(path, lines)
        except ServerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    envelope = reply.get("envelope")
    if not isinstance(envelope, dict):
        print(f"error: --server {path}: an answer without an envelope", file=sys.stderr)
        return EXIT_USAGE
    write_json_line(sys.stdout, envelope)
    display = reply.get("display")
    if isinstance(display, str) and display:
        print(display, file=sys.stderr)
    return EXIT_OK if envelope.get("status") == "success" else EXIT_TOOL_ERROR


class ServerError(Exception):
    """No server answered at the path, or it refused the call."""


def _parser() -> argparse.ArgumentParser:
    """``call``'s options, as the in-process command takes them."""
    parser = argparse.ArgumentParser(prog="toolcage call")
    parser.add_argument("name", nargs="?")
    parser.add_argument("arguments", nargs="?", default="{}")
    parser.add_argument("--jsonl", action="store_true")
    parser.add_argument("--approve", action="store_true")
    parser.add_argument("--config", metavar="FILE")
    parser.add_argument("--server", metavar="PATH")
    # the server logs; accepted so that one command line works both ways
    parser.add_argument("--log-format", choices=("json", "text"))
    parser.add_argument("-v", "--verbose", action="count", default=0)
    return parser


def _connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        sock.close()
        why = exc.strerror or type(exc).__name__
        raise ServerError(f"--server {path}: no toolcage serve answers there ({why})") from None
    uid = peer_uid(sock)
    if uid not in (os.geteuid(), 0):
        sock.close()
        raise ServerError(f"--server {path}: the server runs as uid {uid}, not as this user")
    return sock


def _send(path: str, sock: socket.socket, lines: Any, message: dict[str, Any]) -> None:
    """Send ``message``; a server that closed the connection first is asked what it said
    (a refusal, or the words of a server of another kind)."""
    try:
        sock.sendall(json.dumps(message).encode() + b"\n")
    except OSError as exc:
        _read(path, lines)
        why = exc.strerror
        raise ServerError(f"--server {path}: the server closed the connection ({why})") from None


def _read(path: str, lines: Any) -> dict[str, Any]:
    try:
        raw = lines.readline(_MAX_ANSWER + 1)
    except OSError as exc:
        raise ServerError(f"--server {path}: {exc.strerror}") from None
    if not raw.endswith(b"\n"):
        raise ServerError(f"--server {path}: the server closed the connection")
    message = _parse(path, raw)
    if "refused" in message:
        raise ServerError(f"--server {path}: refused: {message['refused']}")
    return message


def _parse(path: str, raw: bytes) -> dict[str, Any]:
    """A line of the server's as a JSON object, or the error of a server of another kind."""
    try:
        message = json.loads(raw)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        said = raw[:60].decode("utf-8", "replace").strip()
        raise ServerError(f"--server {path}: not a toolcage serve socket (it said {said!r})")
    return message


def _expect_welcome(path: str, lines: Any) -> None:
    if "welcome" not in _read(path, lines):
        raise ServerError(f"--server {path}: not a toolcage serve socket")


def _relay_lines(path: str, sock: socket.socket, lines: Any) -> int:
    """``--jsonl``: stdin to the server as it comes, its answers to stdout in order."""

    def pump() -> None:
        stdin = sys.stdin.fileno()
        try:
            while chunk := os.read(stdin, 64 * 1024):
                sock.sendall(chunk)
            sock.sendall(b"\n")  # ends a last line without one (a blank line is skipped)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server went away: the reader says so

    threading.Thread(target=pump, daemon=True).start()
    status = EXIT_OK
    while True:
        raw = lines.readline(_MAX_ANSWER + 1)
        if not raw:
            return status
        message = _parse(path, raw)
        if "refused" in message:
            raise ServerError(f"--server {path}: refused: {message['refused']}")
        if message.get("status") != "success":
            status = EXIT_TOOL_ERROR
        write_json_line(sys.stdout, message)
