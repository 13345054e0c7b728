"""A synchronous tool function run in a worker process that is killed at the deadline.

A Python thread cannot be stopped from outside: a synchronous ``@tool`` that overruns its
deadline gets a ``timeout`` result on time, but its thread runs on until the function
returns. A tool declared with ``@tool(process=True)`` runs each call in a process of its own
instead, forked from multiprocessing's ``forkserver`` (which is asked to import
``toolcage.runtime`` once, beside what it already imports); at
the call's deadline, or when the call is cancelled, the process is killed (``SIGKILL``) and
reaped before the call reports -- so a ``timeout`` result means the work has stopped.

The price: the function must be importable by its module and qualified name (defined at a
module's top level), its arguments and return value are pickled, it cannot take the call's
:class:`~toolcage.runtime.ToolExecutionContext`, and each call pays a process start
(milliseconds, plus importing the tool's module in the new process).
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.forkserver
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import anyio

from ._deadline import claim_deadline
from ._errors import ToolError, ToolExecutionError, ToolTimeoutError, UsageError
from ._threads import run_in_worker

_CONTEXT = multiprocessing.get_context("forkserver")
_PRELOAD = ["toolcage.runtime"]


def importable_name(func: Callable[..., Any]) -> tuple[str, str]:
    """``func``'s module and qualified name; :class:`UsageError` if it cannot be imported."""
    module, qualname = func.__module__, func.__qualname__
    if "<locals>" in qualname or "<lambda>" in qualname:
        raise UsageError(
            f"{qualname}: a tool run in a worker process must be defined at a module's top level"
        )
    return module, qualname


def _run_child(module: str, qualname: str, kwargs: dict[str, Any], answer: Connection) -> None:
    """In the worker process: import the function, call it, send back what happened."""
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        function = getattr(target, "func", target)  # the FunctionTool the decorator made
        outcome: tuple[bool, Any] = (True, function(**kwargs))
    except BaseException as exc:  # delivered to the caller as the call's failure
        outcome = (False, exc)
    try:
        answer.send(outcome)
    except Exception as exc:  # the value or the exception does not pickle
        failure = ToolExecutionError(f"the tool's answer cannot be sent back: {exc}")
        answer.send((False, failure))


async def call_in_process(
    tool: str, module: str, qualname: str, kwargs: Mapping[str, Any], seconds: float
) -> Any:
    """Call ``module.qualname(**kwargs)`` in a worker process (see the module docstring),
    killed after ``seconds`` or at the call's deadline, the earlier."""
    deadline = claim_deadline()
    at = time.monotonic() + seconds
    if deadline is not None and deadline.at < at:
        at, seconds = deadline.at, deadline.seconds
    _preload()
    receive, send = _CONTEXT.Pipe(duplex=False)
    process = _CONTEXT.Process(
        target=_run_child, args=(module, qualname, dict(kwargs), send), daemon=True
    )
    try:
        await run_in_worker(process.start)
    finally:
        send.close()

    def answer() -> tuple[bool, Any]:
        try:
            result: tuple[bool, Any] = receive.recv()
            return result
        finally:
            receive.close()

    try:
        with anyio.fail_after(max(0.0, at - time.monotonic())):
            ok, value = await run_in_worker(answer)
    except TimeoutError:
        await _stop(process)
        raise ToolTimeoutError(f"Tool {tool} timed out after {seconds:g} s") from None
    except EOFError:
        code = await _stop(process)
        raise ToolExecutionError(
            f"Tool {tool}: its worker process ended without an answer (exit code {code})"
        ) from None
    except BaseException:
        await _stop(process)
        raise
    await _stop(process)
    if ok:
        return value
    if isinstance(value, ToolError):
        raise value
    text = str(value)
    raise ToolExecutionError(f"{type(value).__name__}: {text}" if text else type(value).__name__)


async def _stop(process: BaseProcess) -> int | None:
    """Kill the worker (if it still runs) and reap it, whatever happens to the caller; its
    exit code."""
    with anyio.CancelScope(shield=True):
        if process.exitcode is None:
            process.kill()
        await run_in_worker(process.join)
        code: int | None = process.exitcode
        process.close()
    return code


def _preload() -> None:
    """Have the fork server import ``toolcage.runtime`` once (it takes ~0.5 s), keeping any
    module another user of the fork server asked for; effective until the server starts."""
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    current = list(getattr(server, "_preload_modules", ()))
    if not all(module in current for module in _PRELOAD):
        _CONTEXT.set_forkserver_preload([*current, *_PRELOAD])
