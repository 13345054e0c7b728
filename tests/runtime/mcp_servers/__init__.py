"""MCP servers written with the official SDK, started by the tests as real processes.

A runtime running as root starts a sandboxed server as its ``sandbox_uid`` (nobody), which
must reach the interpreter, its packages and the script. The tests' interpreter may live
where nobody cannot (a pyenv build under ``/root``, say): then the servers run on the
system's Python of the same version, with this environment's packages on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).parent
SANDBOX_UID = 65534
"""The default ``sandbox_uid``: whom a root runtime's sandboxed servers run as."""


def reachable(path: str | Path, uid: int = SANDBOX_UID) -> bool:
    """Whether ``uid`` (in its own group only) can search down to ``path`` and read it."""
    if os.geteuid() != 0:
        return True  # servers run as the tests' own user
    real = Path(os.path.realpath(path))
    for part in (*reversed(real.parents), real):
        info = part.stat()
        shift = 6 if info.st_uid == uid else 3 if info.st_gid == uid else 0
        needed = stat.S_IXOTH | (stat.S_IROTH if part == real else 0)
        if (info.st_mode >> shift) & needed != needed:
            return False
    return True


def _python() -> tuple[list[str], list[str]]:
    """The command that runs a server script, and the directories it needs to see."""
    packages = sysconfig.get_paths()["purelib"]
    own = [sys.executable]
    if all(reachable(path) for path in (sys.executable, sys.base_prefix, packages)):
        return own, sorted({sys.base_prefix, sys.prefix})
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin")
    if system is None or not reachable(system):
        return own, sorted({sys.base_prefix, sys.prefix})  # the servers say why they fail
    return ["/usr/bin/env", f"PYTHONPATH={packages}", system], [packages]


PYTHON, _PYTHON_DIRS = _python()
"""Program (and arguments) that run a server script under the sandbox."""


def runtime_dirs(*more: str | Path) -> list[str]:
    """What a sandboxed Python server needs to see: its interpreter's files, the packages,
    the servers' source, and ``more``."""
    return sorted({*_PYTHON_DIRS, str(SERVERS), *(str(path) for path in more)})


def server_entry(name: str, script: str | Path, *args: str, **extra: Any) -> dict[str, Any]:
    """An ``[[mcp.servers]]`` entry that runs ``script`` (under :data:`SERVERS` unless a
    path is given) with generous timeouts."""
    path = script if isinstance(script, Path) else SERVERS / script
    return {
        "name": name,
        "command": [*PYTHON, str(path), *args],
        "read_only": runtime_dirs(path.parent),
        "timeout": 60.0,
        **extra,
    }
