"""Test guests as tools of a real runtime: registered beside the built-in guest tools, run
by the runtime's own runner (its engine, its deadlines, its close)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import MappingProxyType
from typing import cast

from toolcage.runtime import FunctionDecl, Runtime, SafetyTier
from toolcage.runtime.wasm import GuestLimits, WasmTool, WasmToolSpec

REPO = Path(__file__).resolve().parents[3]
SUBPROCESS_SECONDS = 110
"""A safety net: a child that hangs fails its test (pytest's own limit is 120 s a test)."""


def add_guest(
    runtime: Runtime, name: str, wasm: bytes, *, timeout: float = 30.0, memory_bytes: int = 64 << 20
) -> WasmTool:
    """Register guest ``wasm`` as tool ``name`` of ``runtime``, on the runtime's own runner."""
    builtin = cast(WasmTool, runtime.registry.get("file_read"))
    builtin.runner.modules.add(name, wasm)
    spec = WasmToolSpec(
        decl=FunctionDecl(name, f"The test guest {name}.", {"type": "object", "properties": {}}),
        safety_tier=SafetyTier.READ_ONLY,
        timeout=timeout,
        path_arguments=MappingProxyType({}),
        needs=(),
    )
    limits = GuestLimits(timeout=timeout, memory_bytes=memory_bytes)
    tool = WasmTool(spec, builtin.runner, builtin.mounts, limits=limits)
    runtime.register(tool)
    return tool


def run_script(
    script: str, cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter in ``cwd`` (with a ``workspace`` folder); it can
    import this module as ``tests.runtime.wasm.guest_tools``."""
    (cwd / "workspace").mkdir(exist_ok=True)
    environment = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
        check=False,
    )
