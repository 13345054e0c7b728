"""Startup: a new process, ``Runtime.from_config`` and its first ``file_read``.

Each sample is a fresh ``python -c`` process that imports :mod:`toolcage.runtime`, builds a
runtime from a config file and reads a 4 KB file through the pipeline. One warming run goes
first, so the compiled guest modules are in the on-disk cache and the bytecode of every
module is written (into a private ``PYTHONPYCACHEPREFIX``: the checkout stays clean, and
an environment that turns bytecode writing off does not make every import compile).

The child reports ``time.perf_counter()`` (the system's monotonic clock, one for every
process) at each step, so the steps are measured from the moment the parent started it,
and its CPU time (``time.process_time()``, every thread) at the first result.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .stats import ms

RUNS = 7

CONFIG = """\
[[mounts.areas]]
host = "files"
guest = "/workspace"
tiers = { read_only = "ro", side_effecting = "rw" }
"""

CHILD = """\
import time
started = time.perf_counter()
started_cpu = time.process_time()
import json, sys
import toolcage.runtime
imported = time.perf_counter()
runtime = toolcage.runtime.Runtime.from_config(sys.argv[1])
built = time.perf_counter()

async def first_read():
    async with runtime:
        result = await runtime.execute("file_read", {"path": "/workspace/notes.txt"})
        done = time.perf_counter(), time.process_time()
        assert not result.is_error, result.envelope()
        return done

import anyio
read, read_cpu = anyio.run(first_read)
print(json.dumps({"started": started, "imported": imported, "built": built, "read": read,
                  "started_cpu": started_cpu, "read_cpu": read_cpu}))
"""

STEPS = ("interpreter start", "import toolcage.runtime", "Runtime.from_config", "first file_read")


def _child_env(pycache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _sample(folder: Path, env: dict[str, str]) -> dict[str, float]:
    """One fresh process: the duration of each step and the total, in seconds."""
    config = folder / "toolcage.toml"
    spawned = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(config)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    ended = time.perf_counter()
    if done.returncode != 0:
        raise RuntimeError(f"the startup probe failed:\n{done.stderr}")
    marks = json.loads(done.stdout)
    return {
        STEPS[0]: marks["started"] - spawned,
        STEPS[1]: marks["imported"] - marks["started"],
        STEPS[2]: marks["built"] - marks["imported"],
        STEPS[3]: marks["read"] - marks["built"],
        "total": marks["read"] - spawned,
        "cpu": marks["read_cpu"],
        "cpu before the script": marks["started_cpu"],
        "exit": ended - marks["read"],
    }


def _bare_interpreter(env: dict[str, str]) -> float:
    """Seconds for ``python -c pass``, start to exit."""
    spawned = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - spawned


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="toolcage-startup-") as tmp:
        folder = Path(tmp)
        (folder / "toolcage.toml").write_text(CONFIG, encoding="utf-8")
        (folder / "files").mkdir()
        (folder / "files" / "notes.txt").write_text(("0123456789abcde\n" * 256), "utf-8")
        env = _child_env(folder / "pycache")
        _sample(folder, env)  # warm: guest module cache, bytecode, page cache
        bare = statistics.median(_bare_interpreter(env) for _ in range(RUNS))
        samples = [_sample(folder, env) for _ in range(RUNS)]
    lines = [f"python -c pass, start to exit: median {ms(bare)} ({RUNS} runs)"]
    for step in STEPS:
        lines.append(f"{step}: median {ms(_median(samples, step))}")
    lines += [
        f"process start to the first file_read result: median {ms(_median(samples, 'total'))} "
        "(target: <= 150 ms)",
        f"CPU time of the process to that result: median {ms(_median(samples, 'cpu'))} "
        f"({ms(_median(samples, 'cpu before the script'))} of it before the script; "
        "less sensitive to a busy machine than the wall-clock figures)",
        f"then the process's exit: median {ms(_median(samples, 'exit'))}",
    ]
    return lines


def _median(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(s[key] for s in samples)
