"""``toolcage audit tail|grep``: read the audit log the config names.

    toolcage audit tail [-n N] [--follow] [--config FILE]
    toolcage audit grep PATTERN [--tool T] [--user U] [--status S] [--config FILE]

``tail`` prints the last N records (10 by default), reaching into the rotated files when
the log itself holds fewer; ``--follow`` then prints each record as it is written, across
rotations, until interrupted. ``grep`` prints, oldest first, the records of the log and its
rotated files whose line matches the regular expression PATTERN and every filter given
(``--status`` matches ``success``, ``error`` or an ``error_type``); it exits 0 when some
record matched, 1 when none did, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from toolcage.policies import ConfigError, load_config

from ..observe._sinks import log_files, rotated, rotations_held

EXIT_OK, EXIT_NO_MATCH, EXIT_USAGE = 0, 1, 2
FOLLOW_POLL_SECONDS = 0.2


def add_parser(commands: Any) -> None:
    """The ``audit`` command and its ``tail`` and ``grep`` subcommands."""
    audit = commands.add_parser("audit", help="read the audit log (tail, grep)")
    actions = audit.add_subparsers(dest="audit_command", required=True)
    tail = actions.add_parser("tail", help="print the last records")
    tail.add_argument("-n", type=int, default=10, metavar="N", help="how many (default 10)")
    tail.add_argument("--follow", "-f", action="store_true", help="then print new records")
    grep = actions.add_parser("grep", help="print the records that match")
    grep.add_argument("pattern", help="a regular expression, searched in each record's line")
    grep.add_argument("--tool", metavar="T", help="only calls of this tool")
    grep.add_argument("--user", metavar="U", help="only calls of this user")
    grep.add_argument(
        "--status", metavar="S", help="success, error, or an error_type (permission_denied, ...)"
    )
    for sub in (tail, grep):
        sub.add_argument("--config", metavar="FILE", help="operator config (TOML)")


def run_audit(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    path = config.audit.file(config.base_dir)
    if path is None:
        where = args.config or "the default config"
        print(f"error: {where} names no audit log ([audit] path)", file=sys.stderr)
        return EXIT_USAGE
    if args.audit_command == "tail":
        if args.n < 0:
            print("error: -n must be 0 or more", file=sys.stderr)
            return EXIT_USAGE
        return tail(path, args.n, args.follow, sys.stdout)
    try:
        pattern = re.compile(args.pattern)
    except re.error as exc:
        print(f"error: PATTERN is not a regular expression: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return grep(path, pattern, args.tool, args.user, args.status, sys.stdout)


def tail(path: Path, count: int, follow: bool, out: IO[str]) -> int:
    # The log itself is read through the handle --follow goes on with, so that nothing
    # written between the two is missed.
    stream = _open(path)
    current = stream.read() if stream is not None else b""
    lines, _, pending = current.rpartition(b"\n")
    found = lines.splitlines()
    for file in reversed(log_files(path)[:-1] if stream is not None else log_files(path)):
        if len(found) >= count:
            break
        found[:0] = _read(file).splitlines()
    for line in found[len(found) - count :] if count else []:
        _print(out, line)
    if follow:
        _follow(path, out, stream, pending)
    elif stream is not None:
        stream.close()
    return EXIT_OK


def grep(
    path: Path,
    pattern: re.Pattern[str],
    tool: str | None,
    user: str | None,
    status: str | None,
    out: IO[str],
) -> int:
    found = False
    for line in _lines(path):
        text = line.decode("utf-8", "replace")
        if pattern.search(text) is None:
            continue
        if tool is not None or user is not None or status is not None:
            record = _record(text)
            if record is None:
                continue
            if tool is not None and record.get("tool") != tool:
                continue
            if user is not None and record.get("user_id") != user:
                continue
            if status is not None and status not in (
                record.get("status"),
                record.get("error_type"),
            ):
                continue
        _print(out, line)
        found = True
    return EXIT_OK if found else EXIT_NO_MATCH


def _lines(path: Path) -> Iterator[bytes]:
    for file in log_files(path):
        with open(file, "rb") as stream:
            yield from (line.rstrip(b"\n") for line in stream)


def _read(file: Path) -> bytes:
    try:
        return file.read_bytes()
    except FileNotFoundError:  # rotated away meanwhile
        return b""


def _record(text: str) -> dict[str, Any] | None:
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _print(out: IO[str], line: bytes) -> None:
    out.write(line.decode("utf-8", "replace") + "\n")


def _follow(path: Path, out: IO[str], stream: IO[bytes] | None, pending: bytes) -> None:
    """Print what is appended to ``path`` after ``stream``'s position (``pending``: the
    start of a line already read), going on to the new file when it is rotated."""
    out.flush()
    while True:
        data = stream.read() if stream is not None else b""
        if data:
            pending += data
            *complete, pending = pending.split(b"\n")
            for line in complete:
                _print(out, line)
            out.flush()
            continue
        time.sleep(FOLLOW_POLL_SECONDS)
        if stream is not None and os.fstat(stream.fileno()).st_size < stream.tell():
            # An append that failed was cut back to its last whole line (see FileSink):
            # read again from the end of the last line printed.
            stream.seek(stream.tell() - len(pending))
            pending = b""
        if _replaced(path, stream):
            fresh = _open(path)
            if stream is not None:
                rest = pending + stream.read()  # what was written before the rename
                for line in (rest + b"\n" + _rotated_between(path, stream, fresh)).split(b"\n"):
                    if line:
                        _print(out, line)
                out.flush()
                stream.close()
            pending = b""
            stream = fresh


def _rotated_between(path: Path, held: IO[bytes], fresh: IO[bytes] | None) -> bytes:
    """The whole files rotated after ``held`` (the log until it was rotated) and before
    ``fresh`` (the log now), oldest first: several rotations between two polls. Nothing
    when ``held`` is no longer among the rotated files (moved away, or past ``keep``)."""
    newest_first = []
    with rotations_held(path):
        for number in itertools.count(1):
            try:
                newest_first.append(open(rotated(path, number), "rb"))  # noqa: SIM115
            except FileNotFoundError:
                break
    try:
        found = [os.fstat(file.fileno()) for file in newest_first]
        held_at = _index(found, os.fstat(held.fileno()))
        if held_at is None:
            return b""
        fresh_at = -1 if fresh is None else _index(found, os.fstat(fresh.fileno()))
        between = newest_first[(-1 if fresh_at is None else fresh_at) + 1 : held_at]
        return b"".join(file.read() for file in reversed(between))
    finally:
        for file in newest_first:
            file.close()


def _index(found: list[os.stat_result], wanted: os.stat_result) -> int | None:
    return next((i for i, info in enumerate(found) if os.path.samestat(info, wanted)), None)


def _open(path: Path) -> IO[bytes] | None:
    try:
        return open(path, "rb")  # held across the loop of _follow
    except FileNotFoundError:
        return None


def _replaced(path: Path, stream: IO[bytes] | None) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    if stream is None:
        return True
    held = os.fstat(stream.fileno())
    return (now.st_ino, now.st_dev) != (held.st_ino, held.st_dev)
