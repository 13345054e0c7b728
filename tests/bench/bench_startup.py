"""Startup: a new process, ``Runtime.from_config`` and its first ``file_read``.

First the whole ``toolcage call file_read`` command, as a shell runs it, measured round by
round beside ``cat`` of the same file, ``python -c pass`` and ``python -c "import
wasmtime"`` (the interpreter and the engine's bindings, which no call can do without): the
machine's speed drifts, so the figures to compare are those of one run. In the same rounds,
``toolcage call file_read --server PATH`` answered by a running ``toolcage serve`` (the
long-lived mode for hosts that call the command often; the target is held against it).
Beside them, what a call costs a host that keeps one ``toolcage call --jsonl`` process.

Then each sample is a fresh ``python -c`` process that imports :mod:`toolcage.runtime`, builds a
runtime from a config file and reads a 4 KB file through the pipeline. One warming run goes
first, so the compiled guest modules are in the on-disk cache and the bytecode of every
module is written (into a private ``PYTHONPYCACHEPREFIX``: the checkout stays clean, and
an environment that turns bytecode writing off does not make every import compile).

The child reports ``time.perf_counter()`` (the system's monotonic clock, one for every
process) at each step, so the steps are measured from the moment the parent started it,
and its CPU time (``time.process_time()``, every thread) at the first result.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .stats import ms

RUNS = 7
WHOLE_RUNS = 11
JSONL_CALLS = 500
TARGET = 0.150
"""Seconds a whole ``toolcage call file_read`` may take, start to exit (median)."""

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


def _toolcage() -> list[str]:
    """The ``toolcage`` command, as a shell runs it."""
    script = Path(sys.executable).with_name("toolcage")
    return [str(script)] if script.exists() else [sys.executable, "-m", "toolcage.runtime"]


def _commands(folder: Path) -> dict[str, list[str]]:
    """The whole processes timed side by side, by the name they are reported under."""
    toolcage = _toolcage()
    arguments = '{"path": "/workspace/notes.txt"}'
    return {
        "toolcage call file_read": [
            *toolcage,
            "call",
            "file_read",
            arguments,
            "--config",
            str(folder / "toolcage.toml"),
        ],
        "toolcage call file_read --server": [
            *toolcage,
            "call",
            "file_read",
            arguments,
            "--config",
            str(folder / "toolcage.toml"),
            "--server",
            str(folder / "serve.sock"),
        ],
        "cat": ["cat", str(folder / "files" / "notes.txt")],
        "python -c pass": [sys.executable, "-c", "pass"],
        'python -c "import wasmtime"': [sys.executable, "-c", "import wasmtime"],
    }


def _whole(command: list[str], folder: Path, env: dict[str, str], given: bytes = b"") -> float:
    """Seconds from spawning ``command`` (``given`` on its stdin) to its exit (its output
    read and dropped)."""
    spawned = time.perf_counter()
    done = subprocess.run(
        command, cwd=folder, env=env, input=given, capture_output=True, check=False
    )
    took = time.perf_counter() - spawned
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed:\n{done.stderr.decode(errors='replace')}")
    return took


def _whole_processes(folder: Path, env: dict[str, str]) -> list[str]:
    commands = _commands(folder)
    for command in commands.values():  # warm: bytecode, guest module cache, page cache
        _whole(command, folder, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(WHOLE_RUNS):  # round by round, so that drift touches all alike
        for name, command in commands.items():
            times[name].append(_whole(command, folder, env))
    median = {name: statistics.median(samples) for name, samples in times.items()}
    call, bare = median["toolcage call file_read"], median["python -c pass"]
    engine = median['python -c "import wasmtime"']
    served = median["toolcage call file_read --server"]
    verdict = "met" if call <= TARGET else "not met"
    served_verdict = "met" if served <= TARGET else "not met"
    return [
        *_one_process_for_many(folder, env),
        f"whole processes, start to exit, {WHOLE_RUNS} rounds side by side (medians):",
        *(f"  {name}: {ms(value)}" for name, value in median.items()),
        f"toolcage call file_read: {ms(call)} (target: <= {ms(TARGET)}): {verdict}; "
        f'{call / bare:.1f}x python -c pass, {call / engine:.1f}x python -c "import wasmtime", '
        f"{call / median['cat']:.0f}x cat",
        f"toolcage call file_read --server: {ms(served)} (target: <= {ms(TARGET)}): "
        f"{served_verdict}; {served / bare:.1f}x python -c pass, "
        f"{served / median['cat']:.0f}x cat",
    ]


@contextlib.contextmanager
def _server(folder: Path, env: dict[str, str]) -> Iterator[None]:
    """``toolcage serve`` on ``folder/serve.sock`` while the block runs; SIGTERM after."""
    command = [*_toolcage(), "serve", "--config", str(folder / "toolcage.toml")]
    process = subprocess.Popen(
        [*command, "--socket", str(folder / "serve.sock")],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        while not (line := process.stderr.readline()).startswith("toolcage serve: listening"):
            if not line:
                raise RuntimeError(f"toolcage serve stopped: {process.communicate()[1]}")
        yield
    finally:
        process.terminate()
        process.communicate()


def _one_process_for_many(folder: Path, env: dict[str, str]) -> list[str]:
    """What a call costs a host that keeps one ``toolcage call --jsonl`` process: the time of
    one with ``JSONL_CALLS`` more lines, over that number."""
    command = [*_toolcage(), "call", "--jsonl", "--config", str(folder / "toolcage.toml")]
    line = json.dumps({"tool": "file_read", "arguments": {"path": "/workspace/notes.txt"}})
    one, many = (line + "\n").encode(), ((line + "\n") * (JSONL_CALLS + 1)).encode()
    extra = [
        _whole(command, folder, env, many) - _whole(command, folder, env, one) for _ in range(3)
    ]
    return [
        f"toolcage call --jsonl, one process: {ms(statistics.median(extra) / JSONL_CALLS)} "
        f"a file_read (median of 3 runs of {JSONL_CALLS:,} calls more than 1)"
    ]


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="toolcage-startup-") as tmp:
        folder = Path(tmp)
        (folder / "toolcage.toml").write_text(CONFIG, encoding="utf-8")
        (folder / "files").mkdir()
        (folder / "files" / "notes.txt").write_text(("0123456789abcde\n" * 256), "utf-8")
        env = _child_env(folder / "pycache")
        with _server(folder, env):
            whole = _whole_processes(folder, env)
        _sample(folder, env)  # warm: guest module cache, bytecode, page cache
        bare = statistics.median(_bare_interpreter(env) for _ in range(RUNS))
        samples = [_sample(folder, env) for _ in range(RUNS)]
    lines = [*whole, f"python -c pass, start to exit: median {ms(bare)} ({RUNS} runs)"]
    for step in STEPS:
        lines.append(f"{step}: median {ms(_median(samples, step))}")
    lines += [
        f"process start to the first file_read result: median {ms(_median(samples, 'total'))}",
        f"CPU time of the process to that result: median {ms(_median(samples, 'cpu'))} "
        f"({ms(_median(samples, 'cpu before the script'))} of it before the script; "
        "less sensitive to a busy machine than the wall-clock figures)",
        f"then the process's exit: median {ms(_median(samples, 'exit'))}",
    ]
    return lines


def _median(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(s[key] for s in samples)
