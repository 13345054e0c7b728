"""The command line that starts a stdio MCP server: under bubblewrap, or (unsafely) bare.

A sandboxed server gets new user, PID, IPC, UTS, cgroup and (unless granted) network
namespaces, and sees of the host only::

    /usr, /bin, /lib*    read-only (the system's programs and libraries)
    /etc                 the loader, time-zone and (with network) lookup files, read-only
    granted directories  at their own paths, read-only or read-write as the operator says
    /tmp                 a fresh tmpfs
    /proc, /dev          the sandbox's own

``--die-with-parent`` ends the sandbox when the thread that started it ends (the MCP
connections' thread, which lives as long as the runtime, or the process, if it dies), and
the SDK's transport starts the server in a process group of its own, which it kills when
the connection closes.
Inside, ``sh`` applies the rlimits and ``exec``s the server, so the limits bind every
process it starts. Without the sandbox the same rlimits apply; nothing else does.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from toolcage.policies import McpServerConfig

from ._errors import UsageError

_logger = logging.getLogger("toolcage.mcp")

_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "mime.types", "protocols", "services", "nsswitch.conf", "passwd", "group",
)  # fmt: skip
_ETC_NETWORK = ("resolv.conf", "hosts", "host.conf", "gai.conf", "ssl", "ca-certificates")
_LIMITS = 'ulimit -c 0 && ulimit -v "$1" && ulimit -n "$2" && shift 2 && exec "$@"'


def server_argv(server: McpServerConfig, base_dir: Path, bwrap: str | None = None) -> list[str]:
    """Program and arguments that run ``server``'s command under its sandbox and rlimits."""
    if server.command is None:
        raise UsageError(f"MCP server {server.name!r} has no command")
    limited = [
        "/bin/sh", "-c", _LIMITS, "toolcage-mcp",
        str(server.memory_bytes // 1024), str(server.open_files), *server.command,
    ]  # fmt: skip
    if not server.sandbox:
        _logger.warning(
            "MCP server %r runs unsandboxed (sandbox = false)",
            server.name,
            extra={"event": "mcp.unsandboxed", "server": server.name},
        )
        return limited
    found = bwrap or shutil.which("bwrap")
    if found is None:
        raise UsageError(
            f"MCP server {server.name!r}: bubblewrap (bwrap) is not installed; "
            "install it, or set sandbox = false for this server to run it unsandboxed"
        )
    return [*_bubblewrap_arguments(found, server, base_dir), *limited]


def _bubblewrap_arguments(bwrap: str, server: McpServerConfig, base_dir: Path) -> list[str]:
    args = [
        bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--unshare-cgroup-try", "--hostname", "toolcage", "--die-with-parent",
        "--new-session", "--disable-userns", "--ro-bind", "/usr", "/usr",
    ]  # fmt: skip
    if not server.network:
        args.append("--unshare-net")
    for name in _TOP_LEVEL:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    for name in (*_ETC, *(_ETC_NETWORK if server.network else ())):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108
    workdir = "/tmp"  # noqa: S108
    for flag, paths in (("--ro-bind", server.read_only), ("--bind", server.read_write)):
        for path in paths:
            host_path = (base_dir / path).resolve()
            if not host_path.is_dir():
                raise UsageError(
                    f"MCP server {server.name!r}: granted directory {host_path} does not exist"
                )
            args += [flag, str(host_path), str(host_path)]
    if server.read_write:
        workdir = str((base_dir / server.read_write[0]).resolve())
    return [*args, "--chdir", workdir, "--"]
