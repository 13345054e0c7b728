"""An operator's tool built as a WebAssembly component of the ``toolcage:tool`` world.

The tool is declared like a C guest (``NAME.json`` beside ``NAME.wasm`` in a
``[guest_tools] dirs`` entry, the same keys and checks, see :mod:`._operator_tools`); the
loader tells a component from a module by the file's header. Its ``needs`` may name the
capabilities the world offers as interfaces (``fs``, ``http``, ``clock``, ``log``,
``progress``) and ``mounts`` (the granted mounts as WASI preopens, as for C guests).

Each call runs ``run(arguments)`` (the JSON text of the validated arguments) in a fresh
instance on the component engine (:class:`~._component_runner.ComponentRunner`, shared
with ``python_exec``), linked with WASI 0.2 and the interfaces of the bindings the grant
policy hands out -- in a worker session only the worker's part of them
(:func:`~toolcage.host_bindings.for_worker`) and its mounts read-only, as for C guests.
``ok(text)`` is the result's text; ``err(text)`` an ``execution_error`` with that text,
and the tail of what the tool wrote to stderr (a Python tool's traceback) is logged.
The component's imports were checked against its declaration at load; one whose grant the
operator withdrew (``[egress.grants]``) fails its calls with ``permission_denied``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolcage.host_bindings import HostBinding, for_worker
from toolcage.host_bindings._component_imports import interface
from toolcage.policies import MountError, MountPolicy, SessionKind

from .._errors import PermissionDeniedError, ToolExecutionError
from .._result import ToolResult
from .._tool import ToolExecutionContext
from ._component_runner import ComponentRunner
from ._outcome import outcome
from ._python_exec import bounded
from ._runner import GuestLimits
from ._spec import DeclaredTool, WasmToolSpec
from ._tool import _deadline, _log_line, call_state

STDERR_LOGGED = 4096
"""Bytes of a failed call's stderr (the tool's traceback) logged on ``toolcage.wasm``."""


class ComponentTool(DeclaredTool):
    """An operator's component tool (see the module docstring)."""

    def __init__(
        self,
        spec: WasmToolSpec,
        path: Path,
        runner: ComponentRunner,
        mounts: MountPolicy,
        *,
        imports: frozenset[str],
        bindings: Sequence[HostBinding] = (),
        limits: GuestLimits,
    ) -> None:
        self.spec = spec
        self.path = path
        self.runner = runner
        self.mounts = mounts
        self.imports = imports
        """The capabilities whose interfaces the component imports (read at load)."""
        self.bindings = tuple(bindings)
        self.limits = limits
        self._worker_bindings = for_worker(self.bindings)
        self._preopens = "mounts" in spec.needs

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        """Run the component once with the arguments' JSON."""
        try:
            mounts = self.mounts.mounts_for(self.name, self.safety_tier.value, ctx.principal)
        except MountError as exc:
            raise ToolExecutionError(f"the mounts are misconfigured: {exc}") from exc
        bindings = self.bindings
        if ctx.session_kind is SessionKind.WORKER:
            mounts = tuple(replace(m, writable=False) if m.writable else m for m in mounts)
            bindings = self._worker_bindings
        linked = {binding.name.partition(":")[0] for binding in bindings}
        missing = sorted(self.imports - linked)
        if missing:
            raise PermissionDeniedError(
                f"{self.name} imports {interface(missing[0])}, which is not granted to it "
                f"here (granted: {', '.join(sorted(linked)) or 'none'})"
            )
        state = call_state(self.name, self.limits, ctx, mounts, _deadline(self.limits.timeout))
        run = await self.runner.run(
            self.name,
            self.path,
            "run",
            [json.dumps(dict(args))],
            mounts if self._preopens else (),
            self.limits,
            bindings=bindings,
            state=state,
        )
        if run.guest.failed:
            outcome(run.guest, run.timeout)  # raises the error of how the guest ended
        tag, payload = getattr(run.result, "tag", None), getattr(run.result, "payload", None)
        if not isinstance(payload, str) or tag not in ("ok", "err"):
            raise ToolExecutionError(f"{self.name} returned an unexpected {run.result!r:.200}")
        text = bounded(payload, self.limits.output_bytes)
        if tag == "err":
            if run.stderr.total:  # the traceback, for the operator: the model gets one line
                printed = run.stderr.getvalue()[-STDERR_LOGGED:]
                _log_line(self.name, "warning", printed.decode("utf-8", "replace").strip())
            raise ToolExecutionError(text or f"{self.name} failed")
        return ToolResult.text(text)
