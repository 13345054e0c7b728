"""``toolcage sidecar`` (or ``python -m toolcage.sidecar``): run the shell daemon.

::

    toolcage sidecar --socket /run/user/1000/toolcage/shell.sock --config toolcage.toml

The daemon reads the ``[shell]`` section (from ``--config``, or as JSON on the first line
of stdin with ``--config-stdin``, which is how the runtime starts it) and builds from it the
shell policy that every command from the socket is checked against; it checks that its
sandbox works by running ``true`` in it, prints ``ready`` on stdout and serves until it is
sent SIGTERM/SIGINT -- or, with ``--exit-with-stdin``, until its stdin reaches end of file,
so that it never outlives the runtime that started it. Exit status 2 means it could not
start (bubblewrap missing, unsafe socket directory, bad config); the reason is on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
from anyio.abc import TaskStatus
from toolcage.policies import ConfigError, ShellConfig, ShellMode, ShellPolicy, load_config
from toolcage.policies._log_format import add_logging_arguments, configure_logging

from ._sandbox import BubblewrapSandbox, Sandbox, UnsafeHostShell
from ._server import (
    CommandCheck,
    SidecarServer,
    SocketSetupError,
    UnsafeUncheckedCommands,
    prepare_socket_path,
)
from ._service import ShellService
from ._workspaces import Workspaces

logger = logging.getLogger("toolcage.sidecar")

EXIT_OK, EXIT_FAILED = 0, 2


class StartupError(Exception):
    """The daemon cannot start; the message says why and what to do."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.log_format, args.verbose, daemon=True)
    try:
        config, base_dir = _config(args)
        server = _server(
            config, base_dir, Path(args.socket), args.allow_uid, args.unsafe_skip_policy
        )
        try:
            anyio.run(_serve, server, args.exit_with_stdin, backend="asyncio")
        finally:
            server.service.sandbox.close()
    except (StartupError, ConfigError, SocketSetupError) as exc:
        print(f"toolcage sidecar: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolcage sidecar",
        description="Run the shell daemon (also: python -m toolcage.sidecar).",
    )
    parser.add_argument("--socket", required=True, help="the Unix socket to listen on")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--config", metavar="FILE", help="toolcage config (its [shell] section)")
    source.add_argument(
        "--config-stdin", action="store_true", help="read the [shell] section as JSON from stdin"
    )
    parser.add_argument(
        "--allow-uid", type=int, action="append", default=[], help="also accept this peer uid"
    )
    parser.add_argument(
        "--exit-with-stdin", action="store_true", help="exit when stdin reaches end of file"
    )
    parser.add_argument(
        "--unsafe-skip-policy",
        action="store_true",
        help="UNSAFE: run commands without checking them against the shell policy "
        "(for testing the sandbox on its own)",
    )
    add_logging_arguments(parser)
    return parser


def _config(args: argparse.Namespace) -> tuple[ShellConfig, Path]:
    if args.config_stdin:
        line = sys.stdin.buffer.readline()
        try:
            return ShellConfig.model_validate_json(line), Path.cwd()
        except ValueError as exc:
            raise StartupError(f"bad shell config on stdin: {exc}") from None
    config = load_config(args.config)
    return config.shell, config.base_dir


def _server(
    config: ShellConfig,
    base_dir: Path,
    socket_path: Path,
    extra_uids: list[int],
    skip_policy: bool = False,
) -> SidecarServer:
    template = config.workspace_template(base_dir)
    per_principal = template.per_principal
    workspace = template.fixed
    if config.mode is ShellMode.DISABLED:
        raise StartupError("the shell is disabled (shell.mode = 'disabled')")
    if not workspace.is_dir():
        what = "the directory above each user's workspace" if per_principal else "the workspace"
        raise StartupError(f"{what} {workspace} is not a directory")
    sandbox: Sandbox
    root = os.geteuid() == 0 and config.mode is ShellMode.SANDBOXED
    run_as = config.sandbox_uid if root else None
    workspaces = Workspaces(template, owner_uid=run_as)
    if config.mode is ShellMode.HOST:
        logger.warning(
            "UNSAFE: shell mode 'host' runs commands directly on this machine as uid %d, "
            "with no sandbox; use it for development only",
            os.getuid(),
            extra={"event": "sidecar.unsafe_host_mode", "uid": os.getuid()},
        )
        sandbox = UnsafeHostShell(workspace, config.limits)
    else:
        try:
            sandbox = BubblewrapSandbox(
                None if per_principal else workspace,
                config.limits,
                network=config.network,
                run_as=run_as,
            )
        except FileNotFoundError:
            raise StartupError(
                "bubblewrap (bwrap) is not installed; install the 'bubblewrap' package "
                "(make system-deps), or set shell.mode = 'host' to run commands unsandboxed"
            ) from None
        if run_as is not None:
            workspaces.let_pass()  # bwrap, as run_as, passes the parent of each workspace
            _check_reachable(workspace, run_as)
            if not per_principal:  # one made per principal is given to run_as
                _check_writable(workspace, run_as)
    service = ShellService(
        sandbox,
        config.limits,
        extra_env=config.env,
        kill_leftovers=config.mode is ShellMode.HOST,
        workspaces=workspaces,
    )
    policy: CommandCheck = ShellPolicy.from_config(config, workspace=str(sandbox.root))
    if skip_policy:
        logger.warning(
            "UNSAFE: --unsafe-skip-policy: commands from the socket run without the shell "
            "policy; use it only to test the sandbox itself",
            extra={"event": "sidecar.unsafe_skip_policy"},
        )
        policy = UnsafeUncheckedCommands()
    prepare_socket_path(socket_path)
    uids = frozenset({os.getuid(), *extra_uids})
    return SidecarServer(
        service, socket_path, allowed_uids=uids, mode=config.mode.value, policy=policy
    )


def _check_reachable(workspace: Path, uid: int) -> None:
    """Refuse to start when ``uid`` cannot search its way down to the workspace."""
    for directory in (*reversed(workspace.parents), workspace):
        info = directory.stat()
        if info.st_uid != uid and not info.st_mode & stat.S_IXOTH:
            raise StartupError(
                f"the sidecar runs as root, so commands run as uid {uid} (shell.sandbox_uid), "
                f"which cannot reach the workspace {workspace}: {directory} is not searchable "
                f"by others (mode {stat.S_IMODE(info.st_mode):04o}); make it searchable "
                f"(chmod o+x {directory}) or choose another workspace or sandbox_uid"
            )


def _check_writable(workspace: Path, uid: int) -> None:
    info = workspace.stat()
    if info.st_uid != uid and not info.st_mode & stat.S_IWOTH:
        logger.warning(
            "the sidecar runs as root, so commands run as uid %d (shell.sandbox_uid), which "
            "cannot write to %s; chown the workspace to that uid to let commands write",
            uid,
            workspace,
            extra={"event": "sidecar.workspace_not_writable", "uid": uid, "path": str(workspace)},
        )


async def _serve(server: SidecarServer, exit_with_stdin: bool) -> None:
    await _probe(server)
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        await tg.start(_signals, tg.cancel_scope)
        print("ready", flush=True)
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        if exit_with_stdin:
            tg.start_soon(_lifeline, tg.cancel_scope)


async def _probe(server: SidecarServer) -> None:
    """Run ``true`` in the sandbox: a sidecar that cannot run commands must not start."""
    name = "toolcage-startup-probe"
    with server.service.workspaces.scratch() as owner:
        result = await server.service.exec(name, "true", 30.0, 4096, owner)
        await server.service.close(name, owner)
    if result["exit_code"] != 0:
        detail = (result["stderr"] or result["stdout"]).strip() or f"exit {result['exit_code']}"
        raise StartupError(f"the sandbox cannot run commands: {detail}")


async def _signals(
    scope: anyio.CancelScope, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
        task_status.started()
        async for signum in received:
            name = signal.Signals(signum).name
            logger.info("stopping on %s", name, extra={"event": "sidecar.stopping", "signal": name})
            scope.cancel()
            return


async def _lifeline(scope: anyio.CancelScope) -> None:
    fd = sys.stdin.fileno()
    os.set_blocking(fd, False)
    while True:
        await anyio.wait_readable(fd)
        try:
            if not os.read(fd, 4096):
                break
        except BlockingIOError:
            continue
    logger.info(
        "stdin closed: the runtime is gone, stopping",
        extra={"event": "sidecar.stopping", "signal": "stdin closed"},
    )
    scope.cancel()


if __name__ == "__main__":
    raise SystemExit(main())
