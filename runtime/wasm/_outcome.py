"""Turning how a guest ended into a :class:`ToolResult` or the matching :class:`ToolError`.

This is the one place where wasmtime's ways of ending (a normal return, ``ExitTrap`` with a
status, a ``Trap``, an error from the epoch callback -- noted by the runner as plain data in
a :class:`GuestRun`) and the guest's own JSON result meet the error envelope:

- exit 0 and ``{"ok": true, "text": ...}`` -> a text result, with the document's optional
  ``details`` (a JSON object), ``display`` (its first line is kept) and ``artifacts`` (a list
  of ``{"kind", "ref", "action"}``); a member of another shape is left out and a warning
  names the tool on the ``toolcage.wasm`` logger -- an operator's guest that sends junk
  there still gets its text through, and the built-in tools' tests fail on the warning;
- ``{"ok": false, "error_type": ..., "message": ..., "field"?: ...}`` -> the class of that
  error_type, naming the argument ``field`` (an unknown type is an execution error);
- stopped at its deadline -> :class:`ToolTimeoutError`; stopped by the caller or because
  the engine closed -> :class:`ToolCancelledError`;
- a trap with linear memory at the store limit -> :class:`ToolExecutionError` "memory limit";
- any other trap or a non-zero exit -> :class:`ToolExecutionError` with stderr's tail;
- stdout that is not a result document (a guest that just prints) -> that text, marked
  when it was cut at the output cap.

The result document comes from the guest's linear memory when it left one there (the SDK
does, see ``toolcage.h``), else from stdout. The SDK leaves a *reply*: a success whose text
is valid UTF-8 comes as ``t``, the byte length of a document holding the rest (4 bytes,
little endian), that document (``{"ok":true}`` with ``details``, ``display`` and
``artifacts``) and the text as it is, so the text is decoded, not unescaped from a JSON
string; anything else as ``j`` and the result document. A module built with an earlier SDK
leaves the document alone (``toolcage_result``), and is read as before.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from toolcage.policies import truncation_marker

from .._errors import (
    ERROR_CLASSES,
    ErrorKind,
    ToolCancelledError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from .._result import Artifact, ArtifactAction, TextContent, ToolResult
from ._output import CappedOutput

_guest_log = logging.getLogger("toolcage.wasm")

_DECODER = json.JSONDecoder()

_ACTIONS = {a.value: a for a in ArtifactAction if a is not ArtifactAction.OMITTED}
"""The actions a guest may name."""


@dataclass(slots=True)
class GuestRun:
    """What one guest run left behind, as plain data (no wasmtime object outlives its run)."""

    tool: str
    """The tool's name, for messages."""
    stdout: CappedOutput | None
    """Its standard output (None when it was not kept: the guest leaves its result in
    memory)."""
    stderr: CappedOutput | None
    """Its standard error (None when it was not kept)."""
    exit_code: int | None = None
    """The status of a non-zero ``proc_exit``."""
    failure: str | None = None
    """The text of the trap or error wasmtime raised, if any."""
    stopped: str | None = None
    """``"timeout"``, ``"cancelled"`` or ``"closed"`` when the epoch callback stopped it."""
    memory_bytes: int = 0
    """Linear memory size at the end."""
    memory_limit: int = 0
    """The store's memory limit."""
    document: bytes | None = None
    """The result document the guest left in its memory (a module of an earlier SDK)."""
    reply: bytes | None = None
    """The reply the guest left in its memory, when it used the SDK's channel (see the
    module docstring)."""

    @property
    def failed(self) -> bool:
        """Whether the guest ended with a trap, an error or a non-zero status."""
        return self.failure is not None or self.exit_code is not None


def outcome(run: GuestRun, timeout: float) -> ToolResult:
    """The result of ``run`` (given ``timeout`` s), or raise the :class:`ToolError` it is."""
    if run.stopped == "timeout":
        raise ToolTimeoutError(f"Tool {run.tool} timed out after {timeout:g} s")
    if run.stopped == "cancelled":
        raise ToolCancelledError(f"Tool {run.tool} was cancelled")
    if run.stopped == "closed":
        raise ToolCancelledError(f"Tool {run.tool} was cancelled: the runtime is closed")
    if run.exit_code is not None:
        raise ToolExecutionError(
            f"Tool {run.tool} exited with status {run.exit_code}{_stderr_tail(run)}"
        )
    if run.failure is not None:
        # wasmtime does not say that a failed memory.grow led to the trap; a guest that dies
        # with its memory within an eighth of the limit is taken to have hit it.
        slack = max(2 * 65536, run.memory_limit // 8)
        at_limit = run.memory_limit and run.memory_bytes + slack >= run.memory_limit
        if at_limit or "exceeds memory limits" in run.failure:
            raise ToolExecutionError(
                f"Tool {run.tool} was stopped at its memory limit "
                f"({run.memory_limit // (1 << 20)} MiB)"
            )
        raise ToolExecutionError(
            f"Tool {run.tool} crashed: {_first_line(run.failure)}{_stderr_tail(run)}"
        )
    return _result(run)


def _result(run: GuestRun) -> ToolResult:
    reply = run.reply
    if reply is not None:
        if reply[:1] == b"t":
            return _text_reply(run.tool, reply)
        run.document = reply[1:]
    stdout = run.stdout
    truncated = stdout is not None and stdout.truncated
    raw = run.document if run.document is not None else stdout.getvalue() if stdout else b""
    document = None
    if (run.document is not None or not truncated) and raw.startswith(b'{"ok":'):
        try:
            document = json.loads(raw)
        except ValueError:
            document = None
    if not isinstance(document, dict):
        text = raw.decode("utf-8", errors="replace")
        if stdout is not None and stdout.truncated:
            text += "\n" + truncation_marker(stdout.total, first=stdout.cap)
        return ToolResult.text(text)
    if document.get("ok") is True:
        text = document.get("text", "")
        if len(document) == 2:
            return ToolResult.text(text if isinstance(text, str) else str(text))
        return _structured(run.tool, document)
    raise _guest_error(document)


def _text_reply(tool: str, reply: bytes) -> ToolResult:
    """The result of a text reply (see the module docstring)."""
    end = 5 + int.from_bytes(reply[1:5], "little")
    # The SDK sent valid UTF-8; a module that did not still gets its text through.
    text = reply[end:].decode("utf-8", errors="replace")
    if end == 16:  # just {"ok":true}
        return ToolResult.text(text)
    try:  # what json.loads does, less its checks of the bytes' encoding and whitespace
        head = reply[5:end].decode("utf-8")
        document, used = _DECODER.raw_decode(head)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
        document = None
    else:
        document = document if used == len(head) else None
    if not isinstance(document, dict) or document.get("ok") is not True:
        _guest_log.warning("%s: its reply is malformed: its document is no success", tool)
        return ToolResult.text(text)
    document["text"] = text
    return _structured(tool, document)


def _structured(tool: str, document: dict[str, Any]) -> ToolResult:
    """A success document with more than its text (see the module docstring)."""
    text = document.get("text", "")
    details = document.get("details")
    display = document.get("display")
    listed = document.get("artifacts")
    problems: list[str] = []
    if details is not None and type(details) is not dict:
        problems.append(f"details must be a JSON object, not {_json_type(details)}")
        details = None
    if display is not None and type(display) is not str:
        problems.append(f"display must be a string, not {_json_type(display)}")
        display = None
    elif display is not None and not display.isprintable():  # a line break, a control
        display = display.splitlines()[0] if display.strip() else None
    artifacts = () if listed is None else _artifacts(listed, problems)
    if problems:
        _guest_log.warning("%s: its result document is malformed: %s", tool, "; ".join(problems))
    return ToolResult(
        (TextContent(text if type(text) is str else str(text)),),
        details,
        display or None,
        artifacts=artifacts,
    )


def _artifacts(value: object, problems: list[str]) -> tuple[Artifact, ...]:
    """The well-formed records of a document's ``artifacts``; each fault noted in
    ``problems``."""
    if not isinstance(value, list):
        problems.append(f"artifacts must be a list, not {_json_type(value)}")
        return ()
    found: list[Artifact] = []
    bad: list[str] = []
    for index, item in enumerate(value):
        record = item if isinstance(item, dict) else {}
        kind, ref, action = record.get("kind"), record.get("ref"), record.get("action")
        if (
            kind
            and isinstance(kind, str)
            and isinstance(ref, str)
            and isinstance(action, str)
            and action in _ACTIONS
        ):
            found.append(Artifact(kind, ref, _ACTIONS[action]))
        else:
            bad.append(str(index))
    if bad:
        shown = ", ".join(bad[:10]) + (f" and {len(bad) - 10} more" if len(bad) > 10 else "")
        problems.append(
            f"artifacts {shown} must each be {{kind, ref, action}} with action one of "
            f"{', '.join(_ACTIONS)}"
        )
    return tuple(found)


def _json_type(value: object) -> str:
    """The JSON name of a parsed value's type."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else "null"


def _guest_error(document: dict[str, object]) -> ToolError:
    message = str(document.get("message") or "the tool failed without a message")
    try:
        kind = ErrorKind(str(document.get("error_type")))
    except ValueError:
        return ToolExecutionError(message)
    field = document.get("field")
    return ERROR_CLASSES[kind](message, field=field if isinstance(field, str) else None)


def _first_line(text: str) -> str:
    """The most telling line of a wasmtime error: its cause when it has one."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if "Caused by:" in lines and lines[-1] != "Caused by:":
        return lines[-1]
    return lines[0] if lines else "unknown trap"


def _stderr_tail(run: GuestRun) -> str:
    kept = b"" if run.stderr is None else run.stderr.getvalue()
    tail = kept[-500:].decode("utf-8", errors="replace").strip()
    return f"; stderr: {tail}" if tail else ""
