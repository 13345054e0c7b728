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
import dataclasses
import errno
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

from ._grant import grant_workspace
from ._passage import Passage
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
WRITABLE_PROBE = "test -w . && test -x ."
"""Run in the workspace root at startup: may commands create files there?"""


class StartupError(Exception):
    """The daemon cannot start; the message says why and what to do."""


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.log_format, args.verbose, daemon=True)
    try:
        config, base_dir = _config(args)
        with contextlib.ExitStack() as stack:
            server = _server(
                config,
                base_dir,
                Path(args.socket),
                args.allow_uid,
                args.unsafe_skip_policy,
                stack=stack,
            )
            anyio.run(_serve, server, args.exit_with_stdin, backend="asyncio")
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
    *,
    stack: contextlib.ExitStack,
) -> SidecarServer:
    """The server for ``config``; what it holds is released by ``stack``."""
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
    if run_as is not None:
        if not per_principal:  # one made per principal is given to run_as
            _grant(workspace, run_as)
        blocked = _unsearchable_parent(workspace, run_as)
        if blocked is not None:  # before any thread starts: see ._passage
            workspace = _passage(workspace, run_as, blocked, stack)
            template = dataclasses.replace(template, fixed=workspace)
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
    stack.callback(sandbox.close)
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


def _grant(workspace: Path, uid: int) -> None:
    """Let ``uid`` write in the workspace and in what is created in it later (see
    :mod:`._grant`); where ACLs are missing, a workspace root owns is given to ``uid``."""
    try:
        grant_workspace(workspace, uid)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP) or workspace.stat().st_uid != 0:
            logger.warning(
                "cannot give uid %d (shell.sandbox_uid) its ACL entries on %s: %s",
                *(uid, workspace, exc),
                extra={"event": "sidecar.workspace_not_granted", "path": str(workspace)},
            )
            return
        os.chown(workspace, uid, uid)
        logger.warning(
            "%s has no ACL support: the workspace is given to uid %d (shell.sandbox_uid); "
            "files the file tools write in it stay root's, readable but not writable by "
            "commands",
            *(workspace, uid),
            extra={"event": "sidecar.workspace_chowned", "path": str(workspace), "uid": uid},
        )


def _unsearchable_parent(workspace: Path, uid: int) -> Path | None:
    """The first directory above ``workspace`` that ``uid`` may not pass, if any."""
    for directory in reversed(workspace.parents):
        info = directory.stat()
        if info.st_uid != uid and not info.st_mode & stat.S_IXOTH:
            return directory
    return None


def _passage(workspace: Path, uid: int, blocked: Path, stack: contextlib.ExitStack) -> Path:
    """The workspace bound where ``uid`` may reach it (:mod:`._passage`)."""
    try:
        passage = Passage(workspace)
    except OSError as exc:
        mode = stat.S_IMODE(blocked.stat().st_mode)
        raise StartupError(
            f"the sidecar runs as root, so commands run as uid {uid} (shell.sandbox_uid), "
            f"which cannot reach the workspace {workspace}: {blocked} is not searchable by "
            f"others (mode {mode:04o}), and the sidecar cannot bind the workspace elsewhere "
            f"in a mount namespace of its own ({exc}); make {blocked} searchable "
            f"(chmod o+x {blocked}) or choose another workspace"
        ) from None
    stack.callback(passage.close)
    logger.info(
        "%s is beneath %s, which uid %d may not pass: commands reach it through %s",
        *(workspace, blocked, uid, passage.path),
        extra={"event": "sidecar.workspace_passage", "path": str(passage.path)},
    )
    return passage.path


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
    """Run ``true`` in the sandbox: a sidecar that cannot run commands must not start. In
    the one shared workspace, ask too whether commands may write there (the answer is
    the kernel's, ACLs and the sandbox's uid included); the ``ping`` answer reports it."""
    name = "toolcage-startup-probe"
    service = server.service
    with service.workspaces.scratch() as owner:
        result = await service.exec(name, "true", 30.0, 4096, owner)
        if result["exit_code"] != 0 and service.boxes is not None:
            detail = (result["stderr"] or result["stdout"]).strip() or f"exit {result['exit_code']}"
            logger.warning(
                "a session's sandbox cannot run commands here (%s); each command gets a "
                "bubblewrap of its own",
                detail,
                extra={"event": "sidecar.session_sandbox_unavailable"},
            )
            await service.close(name, owner)
            service.boxes = None
            result = await service.exec(name, "true", 30.0, 4096, owner)
        if result["exit_code"] == 0 and not owner:
            writable = await service.exec(name, WRITABLE_PROBE, 30.0, 4096, owner)
            server.workspace_writable = writable["exit_code"] == 0
        await service.close(name, owner)
    if result["exit_code"] != 0:
        detail = (result["stderr"] or result["stdout"]).strip() or f"exit {result['exit_code']}"
        raise StartupError(f"the sandbox cannot run commands: {detail}")
    if server.workspace_writable is False:
        logger.warning(
            "commands cannot write to the workspace (uid %s); give it to the uid commands "
            "run as (shell.sandbox_uid when the sidecar runs as root)",
            os.geteuid(),
            extra={"event": "sidecar.workspace_not_writable"},
        )


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
