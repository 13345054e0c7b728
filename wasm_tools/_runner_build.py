"""Compile the shell sidecar's session runner, a static native binary, with the pinned zig.

``make wasm`` (``python -m toolcage.wasm_tools.build``) builds ``sidecar/runner/runner.c``
into ``sidecar/runner/toolcage-runner`` beside the guests, for the machine it runs on
(``<arch>-linux-musl``, static, so that it runs inside a sandbox that binds nothing but
``/usr`` and ``/lib*``). Like a guest it is rebuilt only when older than its inputs (its
source and this file, which holds the flags). The sidecar runs each command of a shell
session through it when it is there, and starts a bubblewrap per command when it is not
(see :mod:`toolcage.sidecar._sessions`).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from .build import BuildError, is_stale, zig_environment

RUNNER_DIR = Path(__file__).resolve().parent.parent / "sidecar" / "runner"
SOURCE = RUNNER_DIR / "runner.c"
RUNNER = RUNNER_DIR / "toolcage-runner"
_ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
CFLAGS = ("-std=c11", "-O2", "-s", "-static", "-Wall", "-Werror")


def target() -> str | None:
    """zig's target for this machine, or ``None`` where the runner is not built."""
    arch = _ARCHES.get(platform.machine().lower())
    return None if arch is None or sys.platform != "linux" else f"{arch}-linux-musl"


def build_runner(out: Path = RUNNER, *, force: bool = False) -> Path | None:
    """Build the runner into ``out`` (the tree's, by default) when stale; its path if it
    was (re)built."""
    zig_target = target()
    if zig_target is None or not SOURCE.is_file():
        return None
    if not force and not is_stale(out, [SOURCE, Path(__file__)]):
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=".toolcage-runner-")
    os.close(fd)
    tmp = Path(name)
    command = [sys.executable, "-m", "ziglang", "cc", f"--target={zig_target}", *CFLAGS]
    try:
        done = subprocess.run(  # noqa: S603 - the pinned zig on our own source
            [*command, str(SOURCE), "-o", str(tmp)],
            capture_output=True,
            text=True,
            check=False,
            env=zig_environment(),
        )
        if done.returncode != 0:
            raise BuildError(f"compiling {out.name} failed:\n{done.stderr}")
        tmp.chmod(0o755)
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
