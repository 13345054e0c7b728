"""The command line that starts a stdio MCP server, and as whom: under bubblewrap, or
(unsafely) bare.

A sandboxed server gets new user, PID, IPC, UTS, cgroup and (unless granted) network
namespaces, no capabilities (``--cap-drop ALL``; bubblewrap also sets ``no_new_privs``, so
no setuid program gives any back), and sees of the host only::

    /usr, /bin, /lib*    read-only (the system's programs and libraries)
    /etc                 the loader, time-zone and (with network) lookup files, read-only
    granted directories  at their own paths, read-only or read-write as the operator says
    /tmp                 a fresh tmpfs
    /proc, /dev          the sandbox's own

``--die-with-parent`` ends the sandbox when the thread that started it ends (the MCP
connections' thread, which lives as long as the runtime, or the process, if it dies), and
the transport (:mod:`._stdio`) starts the server in a process group of its own, which
it kills when the connection closes.
Inside, ``bash`` applies the rlimits -- core files, processes, CPU seconds, data segment,
open files -- and ``exec``s the server, so the limits bind every process it starts.

Memory is bounded with ``RLIMIT_DATA``, not ``RLIMIT_AS``: since Linux 4.7 the data limit
counts every private writable mapping (the heap, anonymous ``mmap``), which is what a
program's memory is made of, while address space that is only reserved (``PROT_NONE``) is
not counted. Node reserves some 10 GiB that way for each WebAssembly memory (its own
``fetch()`` runs on one), and the JVM reserves its whole heap up front: an address-space
limit stops them, a data limit does not. What it leaves out: file mappings, shared memory
and stacks, and it binds each process, not the sandbox together.

Processes are counted per user: ``RLIMIT_NPROC`` set inside the new user namespace counts
only that sandbox's processes -- unless the host uid is root, whose processes the kernel
never counts. A runtime running as root therefore starts bubblewrap as the server's
``sandbox_uid`` (nobody, by default), with no supplementary groups: bubblewrap, the server's
command, its interpreter and the granted directories must be reachable for that uid, and
when a server does not start :func:`unreachable` says which part is not.

Without the sandbox the same rlimits apply, as the runtime's own user; nothing else does.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from pathlib import Path

from toolcage.policies import McpServerConfig

from ..._errors import UsageError
from ._access import allows, unsearchable_parent

_logger = logging.getLogger("toolcage.mcp")

_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "mime.types", "protocols", "services", "nsswitch.conf", "passwd", "group",
)  # fmt: skip
_ETC_NETWORK = ("resolv.conf", "hosts", "host.conf", "gai.conf", "ssl", "ca-certificates")
_LIMITS = 'ulimit -HS -c 0 -u "$1" -t "$2" -d "$3" -n "$4" || exit 125; shift 4; exec "$@"'


def server_argv(server: McpServerConfig, base_dir: Path, bwrap: str | None = None) -> list[str]:
    """Program and arguments that run ``server``'s command under its sandbox and rlimits."""
    if server.command is None:
        raise UsageError(f"MCP server {server.name!r} has no command")
    limited = [
        "/bin/bash", "--noprofile", "--norc", "-c", _LIMITS, "toolcage-mcp",
        str(server.processes), str(server.cpu_seconds), str(server.memory_bytes // 1024),
        str(server.open_files), *server.command,
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
        "--new-session", "--disable-userns", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr",
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


def server_uid(server: McpServerConfig) -> int | None:
    """Host uid (and gid) to start a stdio server as: its ``sandbox_uid`` when the runtime is
    root and the server sandboxed; ``None`` keeps the runtime's own."""
    return server.sandbox_uid if server.sandbox and os.geteuid() == 0 else None


def unreachable(server: McpServerConfig, base_dir: Path, uid: int) -> str | None:
    """Why ``uid`` cannot use what ``server`` needs (its granted directories, its program and
    the files its command names), or ``None``; decided from modes and owners along each
    path, as the kernel would, ACLs aside. Called to explain a server that did not start."""
    needs: list[tuple[Path, int, str]] = []
    for path in server.read_only:
        needs.append(((base_dir / path).resolve(), stat.S_IROTH | stat.S_IXOTH, "read"))
    for path in server.read_write:
        needs.append(((base_dir / path).resolve(), stat.S_IWOTH | stat.S_IXOTH, "write to"))
    for index, word in enumerate(server.command or ()):
        if os.path.isabs(word) and os.path.exists(word):
            if index == 0:
                needs.append((Path(word).resolve(), stat.S_IXOTH, "run"))
            else:
                bits = stat.S_IROTH | (stat.S_IXOTH if os.path.isdir(word) else 0)
                needs.append((Path(word).resolve(), bits, "read"))
    for path, bits, verb in needs:
        directory = unsearchable_parent(path, uid, uid)
        if directory is not None:
            mode = stat.S_IMODE(directory.stat().st_mode)
            return (
                f"uid {uid} (sandbox_uid, since the runtime runs as root) cannot reach "
                f"{path}: {directory} is not searchable for it (mode {mode:04o}); make it "
                "searchable, move the server where that uid can read it, or choose "
                "another sandbox_uid"
            )
        if not allows(path, uid, uid, bits):
            return f"uid {uid} (sandbox_uid, since the runtime runs as root) cannot {verb} {path}"
    return None
