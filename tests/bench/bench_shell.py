"""The shell round trip: ``echo hi`` through shell_exec beside the bare sandbox start.

Both columns start the very same bubblewrap command line (built by the sidecar's own
:class:`BubblewrapSandbox`, uid drop included); the first goes through the whole runtime
-- pipeline, approval gate, shell policy, socket, daemon, session bookkeeping -- and the
second is ``subprocess.run`` of that command line from this process. The ratio of the
medians is the price of the daemon and everything in front of it (target: at most 1.5x).
"""

from __future__ import annotations

import os
import shutil
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


async def _through_shell_exec(workspace: Path) -> list[float]:
    config = parse_config(
        {"shell": {"workspace": str(workspace)}, "approval": {"auto_approve": ["shell_exec"]}},
        base_dir=workspace,
    )
    samples = []
    async with Runtime.from_config(config) as runtime:
        for i in range(WARMUP + CALLS):
            started = time.perf_counter()
            result = await runtime.execute("shell_exec", {"command": "echo hi"})
            elapsed = time.perf_counter() - started
            if result.is_error or not result.output_text.startswith("hi"):
                raise RuntimeError(f"shell_exec failed: {result.envelope()}")
            if i >= WARMUP:
                samples.append(elapsed)
    return samples


def _bare_bwrap(workspace: Path) -> list[float]:
    config = ShellConfig(workspace=workspace)
    run_as = config.sandbox_uid if os.geteuid() == 0 else None
    sandbox = BubblewrapSandbox(workspace, config.limits, network=config.network, run_as=run_as)
    samples = []
    for i in range(WARMUP + CALLS):
        read_fd, write_fd = os.pipe()
        spawn = sandbox.spawn("echo hi", PurePosixPath("."), BASE_ENV, write_fd)
        started = time.perf_counter()
        for fd, content in spawn.data:
            os.write(fd, content)
            os.close(fd)
        done = subprocess.run(
            spawn.argv,
            env=spawn.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            pass_fds=spawn.pass_fds,
            user=spawn.user,
            group=spawn.group,
            extra_groups=[] if spawn.user is not None else None,
            start_new_session=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        for fd in (*spawn.pass_fds, read_fd):
            os.close(fd)
        if done.stdout != b"hi\n":
            raise RuntimeError(f"bwrap failed: {done.stderr!r}")
        if i >= WARMUP:
            samples.append(elapsed)
    return samples


def run() -> list[str]:
    workspace = make_workspace()
    try:
        bare = _bare_bwrap(workspace)
        tool = anyio.run(_through_shell_exec, workspace)
    finally:
        shutil.rmtree(workspace.parent, ignore_errors=True)
    t_med, t_p99 = summarise(tool)
    b_med, b_p99 = summarise(bare)
    return [
        f"`echo hi` through shell_exec (runtime -> policy -> socket -> sidecar -> bwrap), "
        f"{CALLS} calls: median {ms(t_med)}, p99 {ms(t_p99)}",
        f"subprocess.run of the same bwrap command line: median {ms(b_med)}, p99 {ms(b_p99)}",
        f"ratio of medians: {t_med / b_med:.2f}x (target: <= 1.5x); "
        f"overhead {ms(t_med - b_med)} per call",
    ]
