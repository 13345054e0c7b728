"""Tool calls as JSON lines: reading them from a stream, and writing answers.

``toolcage call --jsonl`` reads one call per line::

    {"tool": "file_read", "arguments": {"path": "/workspace/a.md"}, "id": "c1"}

and writes one envelope per line, in order. A line that cannot be a call -- not UTF-8, not
JSON, nested too deeply for the parser, longer than the limit, the wrong shape -- is
answered with a ``validation_error`` envelope and the batch goes on; every error answer
names its ``line`` (counted from 1), and every answer repeats the call's ``id`` when it had
one.

Lines are read without blocking the event loop and without a thread, so Ctrl-C while the
command waits for input ends it at once; a line is held in memory only up to the limit
(the rest of an over-long line is skipped as it arrives).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import anyio

from .._errors import ToolValidationError
from .._result import ToolResult
from .._tool import ToolCall

LINE_OVERHEAD = 64 * 1024
"""Bytes a line may take beyond the arguments limit (its ``tool``, ``id`` and punctuation)."""
_CHUNK = 64 * 1024
_KEYS = frozenset({"tool", "arguments", "id"})


class LineReader:
    """Lines of a file descriptor, at most ``limit`` bytes each kept.

    Pipes and terminals are awaited with :func:`anyio.wait_readable`; regular files (which
    are always readable) are read directly.
    """

    def __init__(self, fd: int, limit: int) -> None:
        self._fd = fd
        self._limit = limit
        self._buffer = bytearray()
        self._eof = False
        self._pollable = True

    async def next(self) -> tuple[bytes, bool] | None:
        """The next line without its newline and whether it was over the limit (then its
        bytes are dropped), or ``None`` at the end of the stream."""
        skipping = False
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                too_long = skipping or len(line) > self._limit
                return (b"" if too_long else line), too_long
            if len(self._buffer) > self._limit:
                skipping = True
                self._buffer.clear()
            if self._eof:
                if not self._buffer and not skipping:
                    return None
                line = bytes(self._buffer)
                self._buffer.clear()
                return (b"" if skipping else line), skipping
            await self._fill()

    async def _fill(self) -> None:
        if self._pollable:
            try:
                await anyio.wait_readable(self._fd)
            except PermissionError:  # a regular file or /dev/null: epoll refuses, reads never block
                self._pollable = False
        chunk = os.read(self._fd, _CHUNK)
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True


@dataclass(frozen=True, slots=True)
class LineError:
    """Why a line is not a call, and what of it could be read."""

    message: str
    tool: str = ""
    """The tool the line named, if it named one."""
    call_id: Any = None
    """The line's ``id``, if it had a usable one."""


def parse_call_line(raw: bytes) -> tuple[ToolCall, Any] | LineError:
    """The call a line asks for and its ``id`` (``None`` if none), or why it is none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return LineError(f"the line is not valid UTF-8 (byte {exc.start + 1})")
    try:
        request = json.loads(text)
    except json.JSONDecodeError as exc:
        return LineError(f"the line is not JSON: {exc.msg} at column {exc.colno}")
    except RecursionError:
        return LineError("the line is nested too deeply to be read")
    except ValueError:  # the only other refusal: an integer past the digit limit
        return LineError(
            f"the line holds an integer of more than {sys.get_int_max_str_digits():,} digits; "
            "send it as a string"
        )
    if not isinstance(request, dict):
        return LineError('each line must be an object {"tool": NAME, "arguments": {...}}')
    call_id = request.get("id")
    if call_id is not None and (
        isinstance(call_id, bool) or not isinstance(call_id, str | int) or _unencodable(call_id)
    ):
        return LineError("id must be a string or an integer")
    name = request.get("tool")
    if not isinstance(name, str) or _unencodable(name):
        return LineError("tool must be the tool's name, a string", call_id=call_id)
    unknown = sorted(str(key) for key in request.keys() - _KEYS)
    if unknown:
        return LineError(
            f"unknown key {', '.join(map(repr, unknown))}; a line has tool, arguments and id",
            tool=name,
            call_id=call_id,
        )
    arguments = request.get("arguments", {})
    return ToolCall(name, arguments, "" if call_id is None else str(call_id)), call_id


def _unencodable(value: object) -> bool:
    """A string with a lone surrogate (JSON escapes can spell one) is no name or id."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def error_answer(error: LineError, number: int) -> dict[str, Any]:
    """The ``validation_error`` envelope of a line that is not a call."""
    envelope = ToolResult.failure(error.tool, ToolValidationError(error.message)).envelope()
    return answer(envelope, error.call_id, number)


def answer(envelope: dict[str, Any], call_id: Any, number: int) -> dict[str, Any]:
    """``envelope`` with the call's ``id`` (when it had one) and, on error, its line."""
    if call_id is not None:
        envelope = {"id": call_id, **envelope}
    if envelope.get("status") != "success":
        envelope["line"] = number
    return envelope


def argv_problem(name: str, arguments: str) -> ToolResult | None:
    """A ``validation_error`` when the name or the arguments are not UTF-8 (argv holds the
    operating system's bytes; Python keeps the undecodable ones as lone surrogates)."""
    for value, what in ((name, "the tool name"), (arguments, "the arguments")):
        try:
            os.fsencode(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = ToolValidationError(f"{what}: not valid UTF-8 (byte {exc.start + 1})")
            return ToolResult.failure("" if value is name else name, problem)
    return None
