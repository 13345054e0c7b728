"""The shell round trip: ``echo hi`` through shell_exec beside a minimal bubblewrap sandbox.

Six columns, measured in turn in one loop so that the machine's load weighs on each alike:

* ``shell_exec`` through ``Runtime.execute`` -- pipeline, approval gate, shell policy,
  socket, daemon, session bookkeeping and the command forked in the session's sandbox;
* the first command of a session, which starts the session's sandbox (a new session each
  time);
* the yardstick, ``bwrap --ro-bind / / --unshare-all --die-with-parent echo hi``, run with
  ``subprocess.run`` from this process (target: the tool at most 1.2x of it);
* the same sandbox running ``bash -c 'echo hi'``: what starting bash adds;
* the sidecar's own bwrap command line (built by :class:`BubblewrapSandbox`) run bare, the
  way the daemon starts it -- from a process that is the sandbox uid when this one is root
  -- so that the price of the recipe and the price of the daemon show apart;
* ``shell_exec`` through a runtime whose sidecar runs commands on the host
  (``mode = "host"``): the whole path but bubblewrap.

The floor line is the minimal sandbox running bash over the yardstick: what a command that
starts its own bubblewrap and bash cannot go below, however lean its recipe and daemon --
which is why a session keeps one sandbox and forks each command inside it. The last line
is what the command's own namespaces, fresh /tmp and /proc and the runner's round trip
add to the whole path without a sandbox.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
from pathlib import Path, PurePosixPath

import anyio
from toolcage.policies import ShellConfig
from toolcage.policies._config import ToolcageConfig, parse_config
from toolcage.runtime import Runtime
from toolcage.sidecar._sandbox import BubblewrapSandbox
from toolcage.sidecar._service import BASE_ENV

from tests.sidecar.conftest import make_workspace

from .stats import ms, summarise

CALLS = 200
WARMUP = 20
TARGET = 1.2
MINIMAL = ["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent"]
ECHO = ["echo", "hi"]
BASH = ["bash", "-c", "echo hi"]
COLUMNS = ("tool", "first", "echo", "bash", "bare", "host")
_SECONDS = struct.Struct("d")


def _minimal(bwrap: str, command: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [bwrap, *MINIMAL, *command], stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.stdout != b"hi\n":
        raise RuntimeError(f"minimal bwrap failed: {done.stderr!r}")
    return elapsed


def _bare_once(sandbox: BubblewrapSandbox) -> float:
    read_fd, write_fd = os.pipe()
    spawn = sandbox.spawn("echo hi", PurePosixPath("."), BASE_ENV, write_fd)
    started = time.perf_counter()
    done = subprocess.run(
        spawn.argv,
        env=spawn.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        pass_fds=spawn.pass_fds,
        start_new_session=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    os.close(write_fd)
    os.close(read_fd)
    if done.stdout != b"hi\n":
        raise RuntimeError(f"bare bwrap failed: {done.stderr!r}")
    return elapsed


class BareRunner:
    """Runs the sidecar's command line on request, from a child that is the sandbox uid."""

    def __init__(self, workspace: Path) -> None:
        config = ShellConfig(workspace=workspace)
        uid = config.sandbox_uid if os.geteuid() == 0 else None
        self.sandbox = BubblewrapSandbox(workspace, config.limits, network=False, run_as=None)
        requests, self._request = os.pipe()
        self._reply, replies = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                os.close(self._request)
                os.close(self._reply)
                if uid is not None:
                    os.setgroups([])
                    os.setresgid(uid, uid, uid)
                    os.setresuid(uid, uid, uid)
                while os.read(requests, 1):
                    os.write(replies, _SECONDS.pack(_bare_once(self.sandbox)))
                code = 0
            finally:
                os._exit(code)
        os.close(requests)
        os.close(replies)

    def run(self) -> float:
        os.write(self._request, b"r")
        reply = os.read(self._reply, _SECONDS.size)
        if len(reply) != _SECONDS.size:
            raise RuntimeError("the bare runner died")
        return float(_SECONDS.unpack(reply)[0])

    def close(self) -> None:
        os.close(self._request)
        os.close(self._reply)
        os.waitpid(self.pid, 0)
        self.sandbox.close()


def _config(workspace: Path, mode: str) -> ToolcageConfig:
    shell = {"workspace": str(workspace), "mode": mode}
    return parse_config(
        {"shell": shell, "approval": {"auto_approve": ["shell_exec"]}}, base_dir=workspace
    )


async def _call(runtime: Runtime, session: str = "default") -> float:
    started = time.perf_counter()
    arguments = {"command": "echo hi", "session_id": session}
    result = await runtime.execute("shell_exec", arguments)
    elapsed = time.perf_counter() - started
    if result.is_error or not result.output_text.startswith("hi"):
        raise RuntimeError(f"shell_exec failed: {result.envelope()}")
    return elapsed


async def _measure(workspace: Path, bare: BareRunner) -> dict[str, list[float]]:
    bwrap = bare.sandbox.bwrap
    columns: dict[str, list[float]] = {name: [] for name in COLUMNS}
    async with (
        Runtime.from_config(_config(workspace, "sandboxed")) as runtime,
        Runtime.from_config(_config(workspace, "host")) as host,
    ):
        for i in range(WARMUP + CALLS):
            samples = (
                await _call(runtime),
                await _call(runtime, f"first-{i}"),
                _minimal(bwrap, ECHO),
                _minimal(bwrap, BASH),
                bare.run(),
                await _call(host),
            )
            if i >= WARMUP:
                for name, sample in zip(COLUMNS, samples, strict=True):
                    columns[name].append(sample)
    return columns


def run() -> list[str]:
    workspace = make_workspace()
    bare = BareRunner(workspace)
    try:
        columns = anyio.run(_measure, workspace, bare)
    finally:
        bare.close()
        shutil.rmtree(workspace.parent, ignore_errors=True)
    stats = {name: summarise(samples) for name, samples in columns.items()}
    med = {name: figures[0] for name, figures in stats.items()}
    ratio = med["tool"] / med["echo"]
    verdict = "met" if ratio <= TARGET else "not met"
    minimal = " ".join(["bwrap", *MINIMAL])

    def line(name: str, what: str) -> str:
        return f"{what}: median {ms(stats[name][0])}, p99 {ms(stats[name][1])}"

    return [
        line(
            "tool",
            f"`echo hi` through shell_exec (Runtime.execute -> policy -> socket -> sidecar -> "
            f"the session's sandbox), {CALLS} calls",
        ),
        line("first", "the first command of a session (starts the session's sandbox)"),
        line("echo", f"minimal bwrap ({minimal} echo hi), subprocess.run"),
        f"shell_exec / minimal bwrap: {ratio:.2f}x, target {TARGET}x: {verdict}",
        line("bash", f"minimal bwrap running bash ({minimal} bash -c 'echo hi')"),
        line("bare", "the sidecar's bwrap command line run bare (as the sidecar runs it)"),
        line("host", "shell_exec with shell.mode = 'host' (the whole path but bwrap)"),
        f"floor of a bwrap per command (minimal bwrap running bash / minimal bwrap): "
        f"{med['bash'] / med['echo']:.2f}x",
        f"a command in the session's sandbox over the whole path without one (host mode): "
        f"{ms(med['tool'] - med['host'])}",
    ]
