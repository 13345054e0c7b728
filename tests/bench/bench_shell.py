"""The shell round trip: ``echo hi`` through shell_exec beside a minimal bubblewrap sandbox.

Three columns, measured in turn in one loop so that the machine's load weighs on each alike:

* ``shell_exec`` through ``Runtime.execute`` -- pipeline, approval gate, shell policy,
  socket, daemon, session bookkeeping and the sidecar's sandbox;
* the minimal sandbox, ``bwrap --ro-bind / / --unshare-all --die-with-parent bash -c
  'echo hi'``, run with ``subprocess.run`` from this process: the yardstick (target: the
  tool at most 1.5x of it);
* the sidecar's own bwrap command line (built by :class:`BubblewrapSandbox`) run bare, the
  way the daemon starts it -- from a process that is the sandbox uid when this one is root
  -- so that the price of the recipe and the price of the daemon show apart.
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
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime
from toolcage.sidecar._sandbox import BubblewrapSandbox
from toolcage.sidecar._service import BASE_ENV

from tests.sidecar.conftest import make_workspace

from .stats import ms, summarise

CALLS = 200
WARMUP = 20
TARGET = 1.5
MINIMAL = ["--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "bash", "-c", "echo hi"]
_SECONDS = struct.Struct("d")


def _minimal(bwrap: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [bwrap, *MINIMAL], stdin=subprocess.DEVNULL, capture_output=True, check=False
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


async def _measure(workspace: Path, bare: BareRunner) -> tuple[list[float], ...]:
    config = parse_config(
        {"shell": {"workspace": str(workspace)}, "approval": {"auto_approve": ["shell_exec"]}},
        base_dir=workspace,
    )
    bwrap = bare.sandbox.bwrap
    tool: list[float] = []
    minimal: list[float] = []
    own: list[float] = []
    async with Runtime.from_config(config) as runtime:
        for i in range(WARMUP + CALLS):
            started = time.perf_counter()
            result = await runtime.execute("shell_exec", {"command": "echo hi"})
            elapsed = time.perf_counter() - started
            if result.is_error or not result.output_text.startswith("hi"):
                raise RuntimeError(f"shell_exec failed: {result.envelope()}")
            samples = (elapsed, _minimal(bwrap), bare.run())
            if i >= WARMUP:
                for column, sample in zip((tool, minimal, own), samples, strict=True):
                    column.append(sample)
    return tool, minimal, own


def run() -> list[str]:
    workspace = make_workspace()
    bare = BareRunner(workspace)
    try:
        tool, minimal, own = anyio.run(_measure, workspace, bare)
    finally:
        bare.close()
        shutil.rmtree(workspace.parent, ignore_errors=True)
    t_med, t_p99 = summarise(tool)
    m_med, m_p99 = summarise(minimal)
    o_med, o_p99 = summarise(own)
    ratio = t_med / m_med
    verdict = "meets" if ratio <= TARGET else "misses"
    return [
        f"`echo hi` through shell_exec (Runtime.execute -> policy -> socket -> sidecar -> "
        f"bwrap), {CALLS} calls: median {ms(t_med)}, p99 {ms(t_p99)}",
        f"minimal bwrap ({' '.join(['bwrap', *MINIMAL[:-1]])} 'echo hi'), subprocess.run: "
        f"median {ms(m_med)}, p99 {ms(m_p99)}",
        f"shell_exec / minimal bwrap: {ratio:.2f}x ({verdict} the {TARGET}x target)",
        f"the sidecar's bwrap command line run bare (as the sidecar runs it): median "
        f"{ms(o_med)}, p99 {ms(o_p99)}; recipe vs minimal {o_med / m_med:.2f}x, "
        f"daemon and runtime {ms(t_med - o_med)} per call",
    ]
