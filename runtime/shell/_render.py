"""A command's result as the model and the people see it: its output, its ``details``
(exit code, signal, timing, sizes) and a one-line display (``Ran `make test` (exit 0, 1.20 s)``)."""

from __future__ import annotations

import signal
from collections.abc import Mapping
from typing import Any

from .._errors import (
    ToolTimeoutError,
)
from .._result import TextContent, ToolResult

DISPLAY_COMMAND_CHARS = 60
"""Characters of a command shown in a display line."""


def shown_command(command: str) -> str:
    """A command as a display line shows it: its first line, cut, in backquotes."""
    lines = command.strip().splitlines() or [""]
    first = lines[0]
    if len(first) > DISPLAY_COMMAND_CHARS or len(lines) > 1:
        first = first[:DISPLAY_COMMAND_CHARS].rstrip() + " ..."
    return f"`{first}`"


def render(response: Mapping[str, Any], timeout: float, command: str = "") -> ToolResult:
    """A command's result as text for the model (stdout, then stderr, then a status line),
    with its details and display line (see the module docstring)."""
    parts = [response["stdout"].rstrip("\n")]
    if response["stderr"]:
        parts.append(f"[stderr]\n{response['stderr'].rstrip()}")
    details: dict[str, Any] = {
        key: response[key]
        for key in ("exit_code", "timed_out", "duration", "cwd", "stdout_bytes", "stderr_bytes")
    }
    exit_code = response["exit_code"]
    killed_by = "SIGKILL" if response["timed_out"] else _signal_name(exit_code)
    if killed_by is not None:
        details["signal"] = killed_by
    shown = shown_command(command)
    if response["timed_out"]:
        parts.append(
            f"[timed out after {timeout:g} s: the command and everything it started were "
            f"killed; cwd {response['cwd']}]"
        )
        text = "\n".join(p for p in parts if p)
        error = ToolTimeoutError(
            f"Command timed out after {timeout:g} s. Partial output:\n{text}",
            details={
                "elapsed": round(float(response["duration"]), 3),
                "timeout": timeout,
                "retryable": True,
            },
        )
        return ToolResult(
            content=(TextContent(text),),
            details=details,
            display=f"{shown} timed out after {timeout:g} s",
            is_error=True,
            error=error,
        )
    parts.append(
        f"[exit code {response['exit_code']}, {response['duration']:.2f} s, cwd {response['cwd']}]"
    )
    how = f"exit {exit_code}" if killed_by is None else f"killed by {killed_by}"
    display = f"Ran {shown} ({how}, {response['duration']:.2f} s)"
    return ToolResult.text("\n".join(p for p in parts if p), details=details, display=display)


def _signal_name(exit_code: object) -> str | None:
    """The signal an exit code of 128 + N names, by the shell's convention."""
    if not isinstance(exit_code, int) or not 128 < exit_code < 128 + signal.NSIG:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None
