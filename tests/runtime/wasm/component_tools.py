"""Operators' component tools (Python or JavaScript) in tests: scaffolded and built the way
an operator does it, and a config directory that loads them.

The scaffold's tool is ``greet`` (``fs`` and ``log``); :func:`site` mounts ``data/`` at
``/data`` beside a file outside it, so the same assertions hold for either language."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from toolcage.runtime import Runtime

TOOL = "greet"
MOUNTS = '[[mounts.areas]]\nhost = "data"\nguest = "/data"\ntiers = { read_only = "ro" }\n'
FIRST_LINE = "first line of /data/notes.txt: hello there"
"""What the scaffold's tool answers for ``{"path": "/data/notes.txt"}`` in :func:`site`."""
PER_USER = (
    '[[mounts.areas]]\nhost = "users/{user}/workspace"\nguest = "/workspace"\n'
    'tiers = { read_only = "ro" }\ncreate = true\n'
)


def run_ok(command: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``cwd``; it must succeed."""
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def scaffold(root: Path, lang: str) -> Path:
    """``toolcage new-tool greet --lang LANG`` in ``root/tools``, built by the script it
    wrote; the folder."""
    command = [sys.executable, "-m", "toolcage.runtime", "new-tool", TOOL, "--lang", lang]
    done = run_ok([*command, "--dir", "tools"], root)
    assert f"build_{TOOL}.sh" in done.stdout
    run_ok([str(root / "tools" / f"build_{TOOL}.sh")], root)
    return root / "tools"


def build(root: Path, sources: Path, names: tuple[str, ...], flag: str) -> Path:
    """``names`` copied from ``sources`` into ``root`` and the first built with
    ``python -m toolcage.wasm_tools.build FLAG NAME``; ``root``."""
    for name in names:
        shutil.copy(sources / name, root / name)
    run_ok([sys.executable, "-m", "toolcage.wasm_tools.build", flag, names[0]], root)
    return root


def site(tmp_path: Path, *tools: Path, body: str = MOUNTS) -> Path:
    """A config directory with ``tools`` under ``tools/`` and ``data/notes.txt``."""
    (tmp_path / "tools").mkdir()
    for folder in tools:
        for file in folder.glob("*.*"):
            shutil.copy(file, tmp_path / "tools" / file.name)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("hello there\nsecond line\n")
    (tmp_path / "secret.txt").write_text("do not show\n")
    config = tmp_path / "toolcage.toml"
    config.write_text('[guest_tools]\ndirs = ["tools"]\n\n' + body)
    return config


async def call(
    config: Path, tool: str, arguments: dict[str, Any], context: Any = None
) -> dict[str, Any]:
    """One call through a runtime of ``config``; its envelope."""
    async with Runtime.from_config(config) as runtime:
        result = await runtime.execute(tool, arguments, context)
    envelope: dict[str, Any] = result.envelope()
    return envelope
