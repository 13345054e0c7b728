"""A server whose tools attack the host it runs on: they fork, spin, flood the wire and try
what only privilege allows. Each attack stops on its own after a while (``most``, ``cpu``,
``megabytes``), so that a host without the sandbox's limits is harmed no more than a test
run can bear.

``--marker TOKEN`` is ignored; it names the server's processes on the host's process table.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import signal
import socket
import time
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer

server = MCPServer("hostile")
WIRE = os.dup(1)
"""The pipe the client reads (while serving, the SDK points fd 1 at stderr)."""
_held: list[int] = []
"""Write ends of the pipes the forked children wait on: they live as long as the server."""


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@server.tool()
def fork(most: int) -> str:
    """Fork children that wait, until forking fails or ``most`` are started."""
    started, failure = _fork(most, retry=False)
    return json.dumps({"started": started, "error": failure})


@server.tool()
def bomb(most: int) -> str:
    """Fork children that wait, retrying a failed fork, until ``most`` are started."""
    started, failure = _fork(most, retry=True)
    return json.dumps({"started": started, "error": failure})


def _fork(most: int, *, retry: bool) -> tuple[int, str | None]:
    hold, held = os.pipe()
    _held.append(held)
    started = 0
    while started < most:
        try:
            pid = os.fork()
        except OSError as exc:
            if not retry:
                return started, errno.errorcode.get(exc.errno or 0, str(exc.errno))
            time.sleep(0.05)
            continue
        if pid == 0:  # the child waits until the server is gone
            os.close(held)
            os.read(hold, 1)
            os._exit(0)
        started += 1
    return started, None


@server.tool()
def spin_child(cpu: float) -> str:
    """Fork a child that spins until it has used ``cpu`` seconds of CPU; say how it ended."""
    pid = os.fork()
    if pid == 0:
        while time.process_time() < cpu:
            pass
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited {os.WEXITSTATUS(status)}"


@server.tool()
def spin(cpu: float) -> str:
    """Spin in the server itself until it has used ``cpu`` seconds of CPU."""
    while time.process_time() < cpu:
        pass
    return "spun"


@server.tool()
def flood(megabytes: int) -> str:
    """Write one message of ``megabytes`` MiB to the client, a MiB at a time."""
    os.write(
        WIRE, b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
    )
    chunk = b"x" * 1024 * 1024
    for _ in range(megabytes):
        os.write(WIRE, chunk)
    os.write(WIRE, b'"}}\n')
    return "flooded"


@server.tool()
def hoard(megabytes: int) -> str:
    """Take memory a MiB at a time, touching every page, up to ``megabytes`` MiB; say how
    far it got, and the kernel's limits."""
    held: list[bytearray] = []
    try:
        for _ in range(megabytes):
            held.append(bytearray(1024 * 1024))  # zeroed: every page written
    except MemoryError:
        pass
    limits = {"data": resource.getrlimit(resource.RLIMIT_DATA)[0]}
    limits["address_space"] = resource.getrlimit(resource.RLIMIT_AS)[0]
    return json.dumps({"megabytes": len(held), "limits": limits})


@server.tool()
def privileges() -> str:
    """Try what only privilege allows; report each outcome and the process's credentials."""
    libc = ctypes.CDLL(None, use_errno=True)

    def libc_call(result: int) -> str:
        return "done" if result == 0 else errno.errorcode.get(ctypes.get_errno(), "?")

    def attempt(action: Callable[[], object]) -> str:
        try:
            action()
        except OSError as exc:
            return errno.errorcode.get(exc.errno or 0, str(exc))
        except ValueError as exc:  # how Python's setrlimit reports EPERM
            return str(exc)
        return "done"

    owned = "/tmp/owned"
    with open(owned, "w", encoding="utf-8"):
        pass
    outcomes = {
        "mount": libc_call(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)),
        "unshare_mount_namespace": libc_call(libc.unshare(0x00020000)),
        "unshare_user_namespace": libc_call(libc.unshare(0x10000000)),
        "chown": attempt(lambda: os.chown(owned, 0, 0)),
        "raw_socket": attempt(
            lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
        ),
        "setuid_root": attempt(lambda: os.setuid(0)),
        "raise_process_limit": attempt(
            lambda: resource.setrlimit(resource.RLIMIT_NPROC, (resource.RLIM_INFINITY,) * 2)
        ),
    }
    with open("/proc/self/status", encoding="utf-8") as file:
        status = dict(line.split(":", 1) for line in file.read().splitlines())
    credentials = {
        key: status[key].strip()
        for key in ("Uid", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
    }
    return json.dumps({"outcomes": outcomes, "credentials": credentials})


if __name__ == "__main__":
    server.run()
