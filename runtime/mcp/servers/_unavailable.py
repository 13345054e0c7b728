"""Why a configured MCP server is not available, and when it is tried again.

A server that does not start is named with everything an operator needs to act, in one
line: what went wrong (no answer within its ``timeout``, the connection closed, a grant or
bubblewrap missing), how its process ended (its exit status or the signal), the command
configured, the tail of its stderr, and -- for a root runtime -- what its ``sandbox_uid``
cannot reach. The line passes through the runtime's redactor before it is kept: a
server's stderr (or its command line) may hold a token, and the line is shown by
``toolcage tools`` and ``toolcage check``, logged, and sent to a model in a call's error.
The values of the environment variables passed to the server under a name that names a
credential (``NOTES_TOKEN``) are replaced first, since the redactor does not know them.

Such a server's tools are *unavailable*, not unknown: a call of one is an
``execution_error`` saying why, with ``retry_after``, and the server is started again after
each delay of :func:`retry_delay` -- 1 s, doubling, at most :data:`RETRY_MOST` -- until it
starts. A server disabled for going past one of its bounds (:mod:`._limits`) is not
retried: it would do the same again.
"""

from __future__ import annotations

import os
import shlex
import signal

from mcp import types
from mcp.shared.exceptions import MCPError
from toolcage.policies import McpServerConfig, Redactor

from ..._errors import ToolExecutionError, UsageError
from ._limits import McpLimitExceeded
from ._stdio import ServerRun

RETRY_FIRST = 1.0
"""Seconds before the first new attempt to start a server that did not start."""
RETRY_MOST = 300.0
"""The longest wait between two attempts."""
STDERR_SHOWN = 1000
"""Characters of a server's stderr tail a message quotes (the last ones)."""
COMMAND_SHOWN = 300
"""Characters of a server's command a message quotes."""


def retry_delay(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (0: the first retry)."""
    return min(RETRY_FIRST * 2.0 ** min(attempt, 32), RETRY_MOST)


def start_failure(
    server: McpServerConfig,
    exc: BaseException,
    run: ServerRun | None,
    hint: str | None,
    redactor: Redactor,
) -> ToolExecutionError:
    """The error of a start of ``server`` that failed with ``exc``; ``run`` is what its
    transport saw of the process (``None`` for an HTTP server or one never spawned)."""
    parts = [f"MCP server {server.name!r} did not start: {_reason(server, exc)}"]
    status = None if run is None else run.returncode
    if status is not None:
        parts.append(f"it {exit_status(status)}")
    if server.command is not None:
        parts.append(f"command: {_cut(shlex.join(server.command), COMMAND_SHOWN)}")
    elif server.url is not None:
        parts.append(f"url: {_cut(server.url, COMMAND_SHOWN)}")
    tail = _stderr(run)
    if tail:
        parts.append(f"its stderr ends: {tail}")
    if hint:
        parts.append(hint)
    message = redactor.text(_without_env_secrets("; ".join(parts), server, redactor))
    details: dict[str, object] = {"server": server.name}
    if status is not None:
        details["exit_status"] = status
    return ToolExecutionError(message, details=details)


def exit_status(code: int) -> str:
    """How a process ended, from its return code: ``exited with status 127``,
    ``was killed by SIGKILL``."""
    if code >= 0:
        return f"exited with status {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    return f"was killed by {name}"


def unavailable(failure: ToolExecutionError, retry_after: float | None) -> ToolExecutionError:
    """What a call of a tool of a server that did not start gets: ``failure``, with when
    the server is tried next (``None``: it is not)."""
    if retry_after is None:
        return failure.rewritten(failure.message)
    seconds = max(retry_after, 0.0)
    details = dict(failure.details or {}) | {"retry_after": round(seconds, 1)}
    return failure.rewritten(
        f"{failure.message}; it is tried again in {seconds:.0f} s", details=details
    )


def _reason(server: McpServerConfig, exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"it did not answer within {server.timeout:g} s (timeout)"
    if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
        return "its connection closed before it answered"
    if isinstance(exc, (UsageError, McpLimitExceeded)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _stderr(run: ServerRun | None) -> str:
    """The tail of the server's stderr on one line, its lines joined with `` | ``."""
    if run is None:
        return ""
    lines = [line.strip() for line in run.stderr.splitlines() if line.strip()]
    text = " | ".join(lines)
    return text if len(text) <= STDERR_SHOWN else "..." + text[-STDERR_SHOWN:]


def _without_env_secrets(text: str, server: McpServerConfig, redactor: Redactor) -> str:
    for name in server.env:
        value = os.environ.get(name)
        if value and len(value) >= 4 and redactor.is_secret_key(name):
            text = text.replace(value, f"[redacted ${name}]")
    return text


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most] + "..."
