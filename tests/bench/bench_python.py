"""Running model-written Python: python_exec beside pydantic-monty and python3 in bubblewrap.

Two snippets, ``print(1)`` and a typical csv/json/statistics/datetime one (both from the
compatibility corpus, ``tests/runtime/python_exec/corpus.py``), each run by:

* ``python_exec`` through ``Runtime.execute`` -- the pipeline, a fresh instance of the
  CPython component, the code (target: p50 <= 2 ms), and sixteen callers at once;
* ``pydantic-monty`` 0.0.18 in process, ``Monty(code).run()`` -- a Rust interpreter of a
  subset of Python (later releases run it in a pool of worker subprocesses instead);
* ``python3 -c`` in a minimal bubblewrap sandbox (``/usr`` read-only, every namespace
  unshared, an empty environment): a fresh native CPython per call.

``python_exec`` is measured once more with and without instances prepared ahead (the
runner's spares), in alternating blocks of calls: back to back, and with 10 ms between calls
(a host that does something between calls leaves the spare time to be made).

Beside them, an operator's tool written in Python (the ``toolcage new-tool --lang python``
scaffold, built with ``--python-tool``, taken from the build cache after the first time)
called through ``Runtime.execute``: one ``fs`` read of a mounted file per call.

The three are measured in turn in one loop, so that the machine's load weighs on each alike.
Each then runs the corpus once: of the snippets that end normally, how many print what
CPython 3.14 prints (the host's python3 is older: a few version-specific lines differ). A
runner that is missing (no python_exec tool, no bwrap) prints "not available"; the others
still run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from toolcage.runtime import ErrorKind, Runtime
from toolcage.runtime.cli._new_tool import new_tool
from toolcage.wasm_tools._python_build import PythonBuildError
from toolcage.wasm_tools._python_tool_build import build_python_tool

from tests.runtime.python_exec.corpus import SNIPPETS, Snippet

from .stats import ms, summarise

ROUNDS, WARMUP = 200, 8
CONCURRENT, CONCURRENT_CALLS = 16, 25
BENCHED = {snippet.name: snippet for snippet in SNIPPETS if snippet.name in
           ("print", "csv_json_statistics_datetime")}  # fmt: skip
ENDING_NORMALLY = [snippet for snippet in SNIPPETS if snippet.error is None]
BWRAP = (
    "bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
    "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
    "--unshare-all", "--die-with-parent", "--clearenv",
)  # fmt: skip
CONFIG = """
[[mounts.areas]]
host = "ws"
guest = "/workspace"
tiers = { read_only = "rw", side_effecting = "rw" }
"""

Run = Callable[[Snippet, Path], Awaitable[str]]
"""Runs a snippet in a workspace folder; its stdout. Raises when the run failed."""

MONTY, BWRAP_PYTHON, PYTHON_EXEC = "monty 0.0.18", "python3 -c in bwrap", "python_exec"


async def _monty(snippet: Snippet, workspace: Path) -> str:
    return _monty_sync(snippet.code)


def _monty_sync(code: str) -> str:
    import pydantic_monty

    printed = pydantic_monty.CollectString()
    pydantic_monty.Monty(code).run(print_callback=printed)
    return printed.output


async def _bwrap(snippet: Snippet, workspace: Path) -> str:
    return _bwrap_sync(snippet.code, workspace)


def _bwrap_sync(code: str, workspace: Path) -> str:
    command = [*BWRAP, "--bind", str(workspace), "/workspace", "--chdir", "/workspace",
               "python3", "-c", code]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip().splitlines() or ["failed"])[-1])
    return done.stdout


class PythonExec:
    """``python_exec`` through ``Runtime.execute``, on the config's one workspace (where a
    snippet's files are put first); ``unavailable`` says why it cannot run."""

    def __init__(self, runtime: Runtime, workspace: Path) -> None:
        self.runtime = runtime
        self.workspace = workspace
        self.unavailable: str | None = None

    async def __call__(self, snippet: Snippet, workspace: Path) -> str:
        for name, text in snippet.files.items():
            (self.workspace / name).write_text(text)
        result = await self.runtime.execute("python_exec", {"code": snippet.code})
        if result.is_error:
            if result.error is not None and result.error.kind is ErrorKind.NOT_FOUND:
                self.unavailable = "no python_exec tool in this runtime"
            raise RuntimeError((result.output_text.splitlines() or [""])[0])
        return result.output_text  # stdout without its last newline, then the value


async def _latencies(
    snippet: Snippet, runners: dict[str, Run], workspace: Path
) -> dict[str, list[float] | str]:
    """Per runner, the seconds of each call (runners taking turns), or why it cannot run."""
    found: dict[str, list[float] | str] = {name: [] for name in runners}
    for index in range(WARMUP + ROUNDS):
        for name, run in runners.items():
            samples = found[name]
            if isinstance(samples, str) or (name == BWRAP_PYTHON and index % 4):
                continue  # a fresh native interpreter is slow: a quarter of the rounds
            started = time.perf_counter()
            try:
                out = await run(snippet, workspace)
            except Exception as exc:
                found[name] = f"{type(exc).__name__}: {str(exc)[:100]}"
                continue
            elapsed = time.perf_counter() - started
            if _printed(snippet) not in out:
                found[name] = f"printed {out[:60]!r}"
            elif index >= WARMUP:
                samples.append(elapsed)
    return found


def _printed(snippet: Snippet) -> str:
    """What a run must have printed (python_exec's text drops the last newline)."""
    return snippet.stdout.removesuffix("\n")


async def _corpus(run: Run, root: Path) -> list[str]:
    """The corpus snippets ``run`` does not give CPython 3.14's exact stdout of."""
    failed = []
    for number, snippet in enumerate(ENDING_NORMALLY):
        workspace = root / f"snippet-{number}"
        workspace.mkdir(parents=True)
        for name, text in snippet.files.items():
            (workspace / name).write_text(text)
        try:
            out = await run(snippet, workspace)
        except Exception:
            out = None
        if out is None or _printed(snippet) not in out:
            failed.append(snippet.name)
    return failed


SPARES_BLOCK, SPARES_BLOCKS, GAP = 20, 10, 0.01


async def _spares(runtime: Runtime, tool: PythonExec, workspace: Path) -> list[str]:
    """print(1) with spares off and on, in alternating blocks (first call of each dropped)."""
    runner = getattr(runtime.registry.get(PYTHON_EXEC), "runner", None)
    if runner is None:
        return []
    lines = []
    for gap in (0.0, GAP):
        found: dict[bool, list[float]] = {False: [], True: []}
        for block in range(2 * SPARES_BLOCKS):
            runner.ahead = ahead = bool(block % 2)
            for index in range(SPARES_BLOCK):
                await anyio.sleep(gap)
                started = time.perf_counter()
                await tool(BENCHED["print"], workspace)
                if index:
                    found[ahead].append(time.perf_counter() - started)
        runner.ahead = True
        for ahead in (False, True):
            p50, p99 = summarise(found[ahead])
            lines.append(
                f"  {PYTHON_EXEC}, spares {'on ' if ahead else 'off'}, "
                f"{'back to back' if not gap else f'{gap * 1000:.0f} ms apart'}: "
                f"p50 {ms(p50)}, p99 {ms(p99)}"
            )
    return lines


async def _concurrent(tool: PythonExec, workspace: Path) -> str:
    snippet = BENCHED["csv_json_statistics_datetime"]
    latencies: list[float] = []

    async def caller() -> None:
        for _ in range(CONCURRENT_CALLS):
            started = time.perf_counter()
            await tool(snippet, workspace)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for _ in range(CONCURRENT):
            tasks.start_soon(caller)
    rate = CONCURRENT * CONCURRENT_CALLS / (time.perf_counter() - started)
    p50, p99 = summarise(latencies)
    return (
        f"{PYTHON_EXEC}, {CONCURRENT} callers at once (stdlib snippet): {rate:,.0f} calls/s, "
        f"per call p50 {ms(p50)}, p99 {ms(p99)}"
    )


def _line(name: str, found: list[float] | str) -> str:
    if isinstance(found, str):
        return f"  {name:<20} cannot run it: {found}"
    p50, p99 = summarise(found)
    target = " (target: p50 <= 2 ms)" if name == PYTHON_EXEC else ""
    return f"  {name:<20} p50 {ms(p50)}, p99 {ms(p99)}{target}"


async def _measure(root: Path) -> list[str]:
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    (root / "toolcage.toml").write_text(CONFIG)
    lines: list[str] = []
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        tool = PythonExec(runtime, workspace)
        runners: dict[str, Run] = {PYTHON_EXEC: tool, MONTY: _monty}
        if shutil.which("bwrap"):
            runners[BWRAP_PYTHON] = _bwrap
        try:
            await tool(BENCHED["print"], workspace)
        except RuntimeError:
            if tool.unavailable:
                del runners[PYTHON_EXEC]
        for snippet in BENCHED.values():
            lines.append(f"{snippet.name}:")
            if tool.unavailable:
                lines.append(f"  {PYTHON_EXEC:<20} not available ({tool.unavailable})")
            found = await _latencies(snippet, runners, workspace)
            lines += [_line(name, samples) for name, samples in found.items()]
        if not tool.unavailable:
            lines.append("print (python_exec's instances prepared ahead):")
            lines += await _spares(runtime, tool, workspace)
            lines.append(await _concurrent(tool, workspace))
        lines.append(
            f"the corpus, {len(ENDING_NORMALLY)} snippets that end normally"
            " (CPython 3.14's stdout):"
        )
        if tool.unavailable:
            lines.append(f"  {PYTHON_EXEC:<20} not available")
        for name, run in runners.items():
            failed = await _corpus(run, root / name.replace(" ", "-"))
            ran = [s.name for s in ENDING_NORMALLY if s.name not in failed]
            shown = (
                f" (only: {', '.join(ran)})"
                if len(failed) > len(ran)
                else f" (not: {', '.join(failed)})"
                if failed
                else ""
            )
            lines.append(f"  {name:<20} {len(ENDING_NORMALLY) - len(failed)} run{shown}")
    return lines


TOOL_CONFIG = """
[guest_tools]
dirs = ["tools"]

[[mounts.areas]]
host = "data"
guest = "/data"
tiers = { read_only = "ro" }
"""
PYTHON_TOOL = "operator's Python tool"


async def _python_tool(root: Path) -> str:
    """The scaffold's tool (``greet``: the first line of a file, read through ``fs``)."""
    tools, data = root / "tools", root / "data"
    data.mkdir()
    (data / "notes.txt").write_text("hello\n")
    new_tool("greet", tools, "python")
    try:
        build_python_tool(tools / "greet.py")
    except PythonBuildError as exc:
        return f"{PYTHON_TOOL}: not available ({str(exc).splitlines()[0]})"
    (root / "toolcage.toml").write_text(TOOL_CONFIG)
    samples: list[float] = []
    async with Runtime.from_config(root / "toolcage.toml") as runtime:
        for index in range(WARMUP + ROUNDS):
            started = time.perf_counter()
            result = await runtime.execute("greet", {"path": "/data/notes.txt"})
            elapsed = time.perf_counter() - started
            if result.output_text != "first line of /data/notes.txt: hello":
                return f"{PYTHON_TOOL}: cannot run it: {result.output_text[:100]!r}"
            if index >= WARMUP:
                samples.append(elapsed)
    p50, p99 = summarise(samples)
    return (
        f"{PYTHON_TOOL} (greet: one fs read) through Runtime.execute: p50 {ms(p50)}, p99 {ms(p99)}"
    )


def run() -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        lines = anyio.run(_measure, Path(tmp) / "exec")
    with tempfile.TemporaryDirectory() as tmp:
        return [*lines, anyio.run(_python_tool, Path(tmp))]


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "default")
    print("\n".join(run()))
