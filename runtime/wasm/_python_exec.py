"""``python_exec``: Python code run by CPython compiled to a WebAssembly component.

Each call runs the code in a **fresh instance** of the component (``toolcage:python/exec``,
``run(code) -> result<option<string>, string>``) on the component engine
(:mod:`._component_runner`): the code runs as ``__main__`` with ``/workspace`` as its
working directory when that is mounted, sees the mounts its tier grants -- it is
``side_effecting``, so the default areas are writable; a read-only grant (or a worker
session) makes them read-only preopens -- and nothing else of the host: no network, no
processes, no environment variables. ``[tools.python_exec]`` sets its ``timeout``,
``memory_bytes``, ``output_bytes`` and ``concurrency`` as for any tool, and
``component = "FILE"`` runs an operator's own build of the component instead of the
bundled one.

The result, like a REPL's: what the code printed (stdout, then stderr under a
``[stderr]`` line), then the ``repr`` of its final expression when that is not ``None``;
``details`` say how many bytes each stream had (models see them: they stay small). An
exception is an ``execution_error`` whose message carries what was printed before it and then the
traceback (of the code's own frames, file ``<code>``), so a host sees ``is_error`` and a
model sees everything; ``details.exception`` is the line naming it. Each stream (and the value)
keeps at most ``output_bytes``, cut with a marker giving the real size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolcage.policies import MountError, MountPolicy, SessionKind, truncation_marker

from .._errors import ToolExecutionError
from .._result import ToolResult
from .._tool import FunctionDecl, SafetyTier, ToolExecutionContext
from ._component_runner import ComponentRunner
from ._components import bundled_component
from ._outcome import outcome
from ._output import CappedOutput
from ._runner import GuestLimits

NAME = "python_exec"
TIMEOUT = 30.0
"""Seconds per call unless ``[tools.python_exec] timeout`` says otherwise."""
MEMORY_BYTES = 256 << 20
"""Linear memory of a call unless ``[tools.python_exec] memory_bytes`` says otherwise."""
MAX_CODE_CHARS = 100_000
"""The longest ``code`` accepted (its schema's ``maxLength``)."""

DECL = FunctionDecl(
    NAME,
    "Run Python 3 code in a fresh sandboxed interpreter and return what it printed and the "
    "value of its last expression (like a REPL).\n\n"
    "The whole standard library is available; the working directory is /workspace, and the "
    "mounted directories can be read (and written where granted). Nothing persists between "
    "calls. There is no network, no subprocesses and no threads.",
    {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_CODE_CHARS,
                "description": "Python source, run as __main__; a final expression's value "
                "is returned.",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    },
)


class PythonExecTool:
    """The ``python_exec`` built-in (see the module docstring)."""

    name = NAME

    def __init__(
        self,
        runner: ComponentRunner,
        mounts: MountPolicy,
        limits: GuestLimits,
        *,
        component: Path | None = None,
    ) -> None:
        self.runner = runner
        self.mounts = mounts
        self.limits = limits
        self.component = component
        """The operator's component file, or None for the bundled one."""

    @property
    def timeout(self) -> float:
        return self.limits.timeout

    @property
    def safety_tier(self) -> SafetyTier:
        return SafetyTier.SIDE_EFFECTING

    @property
    def needs(self) -> tuple[str, ...]:
        return ("mounts",)

    def schema(self) -> FunctionDecl:
        return DECL

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        try:
            mounts = self.mounts.mounts_for(NAME, self.safety_tier.value, ctx.principal)
        except MountError as exc:
            raise ToolExecutionError(f"the mounts are misconfigured: {exc}") from exc
        if ctx.session_kind is SessionKind.WORKER:
            mounts = tuple(replace(m, writable=False) if m.writable else m for m in mounts)
        path = self.component if self.component is not None else bundled_component()
        code = str(args["code"])
        run = await self.runner.run(
            NAME, path, "run", [code], mounts, self.limits, owner=ctx.principal
        )
        guest = run.guest
        if guest.failed:
            outcome(guest, run.timeout)  # raises the error of how the guest ended
        stdout, stderr = run.stdout, run.stderr
        details: dict[str, Any] = {"stdout_bytes": stdout.total, "stderr_bytes": stderr.total}
        tag, payload = getattr(run.result, "tag", None), getattr(run.result, "payload", None)
        if tag == "err" and isinstance(payload, str):
            details["exception"] = _exception_line(payload)
            printed = _printed(stdout, stderr)
            message = f"{printed}\n{bounded(payload, self.limits.output_bytes)}".lstrip("\n")
            raise ToolExecutionError(message, details=details)
        if tag != "ok" or not (payload is None or isinstance(payload, str)):
            raise ToolExecutionError(f"the component returned an unexpected {run.result!r:.200}")
        value = None if payload is None else bounded(payload, self.limits.output_bytes)
        text = "\n".join(p for p in (_printed(stdout, stderr), value) if p) or "(no output)"
        lines = code.count("\n") + 1
        return ToolResult.text(
            text, details=details, display=f"Ran {lines} line{'s' * (lines != 1)} of Python"
        )


def _printed(stdout: CappedOutput, stderr: CappedOutput) -> str:
    """What the code printed: stdout, then stderr under a ``[stderr]`` line."""
    parts = []
    if stdout.total:
        parts.append(_stream(stdout))
    if stderr.total:
        parts.append("[stderr]\n" + _stream(stderr))
    return "\n".join(parts)


def _stream(output: CappedOutput) -> str:
    text = output.getvalue().decode("utf-8", errors="replace").removesuffix("\n")
    if output.truncated:
        text += "\n" + truncation_marker(output.total, first=output.cap)
    return text


def bounded(text: str, cap: int) -> str:
    """``text``, cut to ``cap`` UTF-8 bytes with a marker giving its real size."""
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= cap:
        return text
    kept = data[:cap].decode("utf-8", errors="ignore")
    return f"{kept}\n{truncation_marker(len(data), first=cap)}"


def _exception_line(traceback: str) -> str:
    """The line naming the exception: the first after the last frame's (indented) lines;
    notes and chained tracebacks' earlier parts are left out."""
    lines = [line for line in traceback.splitlines() if line.strip()]
    last_frame = max((i for i, line in enumerate(lines) if line.startswith(" ")), default=-1)
    for line in lines[last_frame + 1 :]:
        if not line.startswith("Traceback ("):
            return line[:200]
    return ""
