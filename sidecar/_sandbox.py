"""How one command is started: under bubblewrap, or (unsafely) straight on the host.

A command gets a sandbox -- a bubblewrap with new user, PID, IPC, UTS, cgroup and (unless
the operator shares it) network namespaces -- of its own or, through the session's runner,
its session's, in which it gets PID, mount, IPC and user namespaces, ``/tmp`` and
``/proc`` of its own (:meth:`BubblewrapSandbox.session_spawn`, :mod:`._sessions`)::

    /usr, /bin, /lib*    read-only from the host
    /etc                 copies of loader, time-zone and lookup files, a synthetic passwd
                         and group (one read-only directory staged when the sidecar starts)
    /workspace           the workspace, read-write (the only host data it sees): the
                         runtime's, or the one of the principal the command runs for
                         (see :mod:`._workspaces`)
    /tmp                 a fresh tmpfs of limited size
    /proc, /dev          the sandbox's own (it sees only its own processes)

``--die-with-parent`` ties the sandbox to its bwrap process: killing bwrap's process group
kills the namespace's init, and with it every process the command started, however it
daemonised. ``--new-session`` stops it from reaching a terminal; ``--disable-userns`` from
building namespaces of its own. Inside, bash applies the rlimits before anything else.

Processes are counted per user: ``RLIMIT_NPROC`` set *inside* the new user namespace
counts only that sandbox's processes, which contains a fork bomb -- unless the host uid is
root, whose processes the kernel never counts. A sidecar running as root therefore starts
bwrap as ``sandbox_uid`` (nobody, by default; see :mod:`._child`).

The command reaches bash as an argument, never as part of the script; after it runs, the
script reports the final working directory and exported variables on a pipe so that the
session can carry them to its next command (:mod:`._report`).

Every part of the command line costs each command its share of bubblewrap's start (one
bind mount ~0.2 ms here, since bubblewrap rereads the mount table after each), so the
system is bound in few pieces and the files bubblewrap used to copy in per command are
staged once (:mod:`._staging`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

from toolcage.policies import ShellLimits

from ._staging import Staging

GUEST_WORKSPACE = PurePosixPath("/workspace")
SANDBOX_UID = 1000
"""The uid commands see inside the sandbox."""
BASH = "/bin/bash"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_ETC = (
    "alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone",
    "mime.types", "magic", "magic.mime", "protocols", "services", "nsswitch.conf",
)  # fmt: skip
_ETC_NETWORK = ("resolv.conf", "hosts", "host.conf", "gai.conf", "ssl", "ca-certificates")
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

# Forced git settings: config from the command line outranks a repository's own, so hooks,
# fsmonitor, pagers and transport helpers named in a repository cannot run. Only the http
# and https transports are allowed: a local path or file:// URL as a remote would make git
# start upload-pack or receive-pack in *another* repository, which then reads that
# repository's config (hooks, core.alternateRefsCommand, filter drivers on
# receive.denyCurrentBranch=updateInstead, ...) without the guard having looked at it.
GIT_FORCED = (
    ("core.hooksPath", "/dev/null"), ("core.fsmonitor", "false"), ("core.pager", "cat"),
    ("core.sshCommand", "false"), ("core.askPass", "true"), ("credential.helper", ""),
    ("core.alternateRefsCommand", "true"),
    ("protocol.allow", "never"), ("protocol.http.allow", "always"),
    ("protocol.https.allow", "always"), ("protocol.file.allow", "never"),
    ("protocol.ext.allow", "never"), ("protocol.fd.allow", "never"),
    ("safe.bareRepository", "explicit"), ("gpg.program", "false"),
    ("gpg.ssh.program", "false"), ("gpg.x509.program", "false"),
    ("sequence.editor", "true"), ("core.editor", "true"),
)  # fmt: skip

GIT_SERVER_PROGRAMS = (
    "git-receive-pack", "git-upload-pack", "git-upload-archive", "git-shell", "git-daemon",
    "git-http-backend",
)  # fmt: skip
"""The serving side of git's transports: they work in the repository named on their command
line, whose config the guard has not read, so the guard never runs them."""

GIT_BINARIES = ("/usr/bin/git", "/usr/lib/git-core/git", "/usr/libexec/git-core/git")
"""Where git may be found; the first one found is the real git the guard runs."""

GIT_GUARD_KEYS = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
    "core.safecrlf", "core.quotepath", "core.abbrev", "core.compression", "core.sharedrepository",
    "core.excludesfile", "core.attributesfile", "core.worktree", "core.longpaths",
    "user.*", "author.*", "committer.*", "init.defaultbranch", "extensions.objectformat",
    "extensions.worktreeconfig", "extensions.refstorage", "remote.*.url", "remote.*.pushurl",
    "remote.*.fetch", "remote.*.push", "remote.*.tagopt", "remote.*.prune", "remote.*.mirror",
    "branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote",
    "branch.*.description", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote",
    "merge.ff", "merge.conflictstyle", "color.*", "log.*", "status.*", "advice.*", "gc.*",
    "fetch.prune", "diff.renames", "diff.algorithm", "diff.mnemonicprefix", "i18n.*",
    "rerere.enabled", "commit.gpgsign", "tag.gpgsign", "format.pretty", "blame.*",
    "index.version", "feature.*", "maintenance.auto", "submodule.active",
)  # fmt: skip
"""Repository config keys git may run with (shell ``case`` patterns); any other key in a
repository's own config -- filters, diff drivers, aliases, includes -- stops git."""


def _git_guard() -> str:
    forced = "\n".join(
        f"export GIT_CONFIG_KEY_{i}='{key}' GIT_CONFIG_VALUE_{i}='{value}'"
        for i, (key, value) in enumerate(GIT_FORCED)
    )
    patterns = "|".join(GIT_GUARD_KEYS)
    servers = "|".join(GIT_SERVER_PROGRAMS)
    subcommands = "|".join(name.removeprefix("git-") for name in GIT_SERVER_PROGRAMS)
    return f"""#!/bin/bash
# toolcage: git runs only with a repository config that names no programs
name=${{0##*/}}
case $name in git-*) ;; *) name=git ;; esac
case $name in {servers})
  echo "toolcage: git refused: $name serves another repository" >&2; exit 126 ;;
esac
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
export GIT_EDITOR=true GIT_SEQUENCE_EDITOR=true GIT_PAGER=cat PAGER=cat GIT_ASKPASS=true
unset GIT_DIR GIT_WORK_TREE GIT_EXEC_PATH GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_EXTERNAL_DIFF
unset GIT_SSH GIT_SSH_COMMAND GIT_PROXY_COMMAND GIT_TEMPLATE_DIR
export GIT_CONFIG_COUNT={len(GIT_FORCED)}
{forced}
# the options before the subcommand choose the repository: the check reads the same one
lead=()
while (( $# )); do
  case $1 in
    -C|-c|--git-dir|--work-tree|--namespace|--super-prefix|--config-env)
      (( $# >= 2 )) || break; lead+=("$1" "$2"); shift 2 ;;
    -*) lead+=("$1"); shift ;;
    *) break ;;
  esac
done
case ${{1-}} in {subcommands})
  echo "toolcage: git refused: git $1 serves another repository" >&2; exit 126 ;;
esac
while IFS= read -r -d '' scope && IFS= read -r -d '' entry; do
  case $scope in local|worktree) ;; *) continue ;; esac
  key=${{entry%%$'\\n'*}}
  case ${{key,,}} in
    {patterns.lower()}) ;;
    *) echo "toolcage: git refused: the repository's config sets '$key' (it may run programs)" >&2
       exit 126 ;;
  esac
done < <(/run/toolcage/git "${{lead[@]}}" config --list --show-scope -z 2>/dev/null)
exec -a "$name" /run/toolcage/git "${{lead[@]}}" "$@"
"""


GIT_GUARD = _git_guard()


RUNNER = Path(__file__).resolve().parent / "runner" / "toolcage-runner"
"""The session runner ``make wasm`` builds (``wasm_tools/_runner_build.py``)."""
RUNNER_GUEST = "/run/toolcage/runner"

SHELL_NAME = "bash"
"""``$0`` of the script: bash names it in its own messages (``bash: line 1: ...``)."""


def prelude(limits: ShellLimits, *, root: str, report_fd: int) -> str:
    """The bash script that applies limits, enters the cwd, runs ``$1`` and reports.

    Everything up to the ``eval`` of the command is on the script's first line: bash
    numbers the lines of ``eval``-ed text from the line ``eval`` is on, so its messages
    count the command's own lines (``bash: line 1: note.txt: Permission denied``), never
    the prelude's."""
    setup = "; ".join(
        (
            f"ulimit -HS -c 0 -u {limits.processes} -t {limits.cpu_seconds} "
            f"-v {limits.memory_bytes // 1024} -f {max(1, limits.file_bytes // 1024)} "
            "|| { echo 'toolcage: cannot apply limits' >&2; exit 125; }",
            "__tc_command=$1 __tc_cwd=$2",
            "set --",
            f'cd -- "$__tc_cwd" 2>/dev/null || {{ echo "toolcage: $__tc_cwd is gone; '
            f"running in {root}\" >&2; cd -- '{root}' || exit 125; }}",
            "unset __tc_cwd",
            f'eval "$__tc_command" {report_fd}>&-',
        )
    )
    return f"""{setup}
__tc_status=$?
{{ builtin printf 'cwd\\0%s\\0' "$PWD"; builtin export -p; }} >&{report_fd} 2>/dev/null
exit $__tc_status
"""


@dataclass
class Spawn:
    """Everything needed to start one command."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None = None
    pass_fds: list[int] = field(default_factory=list)
    user: int | None = None
    group: int | None = None


class Sandbox(Protocol):
    """Turns a command into a :class:`Spawn`; knows where the workspace appears."""

    root: PurePosixPath
    """The workspace as commands see it."""

    def spawn(
        self,
        command: str,
        cwd: PurePosixPath,
        env: Mapping[str, str],
        report_fd: int,
        workspace: Path | None = None,
    ) -> Spawn:
        """The command's :class:`Spawn`; ``workspace``, the host directory to work in, or
        ``None`` for the sandbox's own workspace."""
        ...

    def close(self) -> None:
        """Release what the sandbox holds."""


class BubblewrapSandbox:
    """Commands under bubblewrap (see the module docstring)."""

    root = GUEST_WORKSPACE

    def __init__(
        self,
        workspace: Path | None,
        limits: ShellLimits,
        *,
        network: bool,
        run_as: int | None,
        bwrap: str | None = None,
    ) -> None:
        self.workspace = workspace
        """The workspace every command binds; ``None``: each command brings its own."""
        self.limits = limits
        self.network = network
        self.run_as = run_as
        """Host uid (and gid) to start bwrap as, when the sidecar is root."""
        found = bwrap or shutil.which("bwrap")
        if found is None:
            raise FileNotFoundError("bwrap")
        self.bwrap = found
        self.git_paths = [path for path in GIT_BINARIES if Path(path).is_file()]
        staged = {"git": (GIT_GUARD.encode(), 0o555)}
        if RUNNER.is_file():  # copied where the sandbox uid can read it, as the guard is
            staged["runner"] = (RUNNER.read_bytes(), 0o555)
        self.staging = Staging(
            _ETC,
            {"passwd": _PASSWD, "group": _GROUP},
            staged,
            mount_points=_ETC_NETWORK if network else (),
        )
        self._fixed = self._fixed_arguments()
        chdir = self._fixed.index("--chdir")
        self._mounts, self._command = self._fixed[:chdir], self._fixed[chdir:]
        self.runner: Path | None = self.staging.path / "runner" if "runner" in staged else None
        """The session runner (:mod:`._sessions`), when it was built."""

    def close(self) -> None:
        """Remove the staged files (commands started after this fail)."""
        self.staging.close()

    def _fixed_arguments(self) -> list[str]:
        args = [
            self.bwrap, "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "toolcage", "--die-with-parent", "--new-session", "--disable-userns",
            "--ro-bind", "/usr", "/usr",
        ]  # fmt: skip
        if not self.network:
            args.append("--unshare-net")
        for name in _TOP_LEVEL:
            host = Path("/") / name
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), str(host)]
            elif host.is_dir():
                args += ["--ro-bind", str(host), str(host)]
        args += ["--ro-bind", str(self.staging.etc), "/etc"]
        for name in _ETC_NETWORK if self.network else ():
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        args += [
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(self.limits.tmp_bytes), "--perms", "1777", "--tmpfs", "/tmp",  # noqa: S108
        ]  # fmt: skip
        if self.workspace is not None:
            args += ["--bind", str(self.workspace), str(GUEST_WORKSPACE)]
        if self.git_paths:
            args += ["--ro-bind", self.git_paths[0], "/run/toolcage/git"]
        # the guard stands in for git wherever git is found: on PATH and in its exec path,
        # through which git runs git again (for submodules, say) and its dashed builtins
        guard = str(self.staging.path / "git")
        for path in self.git_paths:
            args += ["--ro-bind", guard, path]
        args += ["--chdir", str(GUEST_WORKSPACE), "--", BASH, "--noprofile", "--norc", "-c"]
        return args

    def session_spawn(self, socket_fd: int, workspace: Path | None) -> Spawn:
        """A session's sandbox, whose command is the runner on ``socket_fd``.

        The same mounts and namespaces as a command's, but as uid 0 of its user namespace
        with the two capabilities the runner needs to give each command namespaces of its
        own (``CAP_SYS_ADMIN``) and to map that command's uid 1000 onto the session's 0
        (``CAP_SETFCAP``); no command keeps either. ``--disable-userns`` is left out: the
        runner nests each command in a user namespace that may make none (see its header).
        """
        if self.runner is None:
            raise FileNotFoundError("the session runner is not built")
        args = [arg for arg in self._mounts if arg != "--disable-userns"]
        uid = args.index("--uid")
        args[uid + 1 : uid + 4 : 2] = ["0", "0"]  # --uid 0 --gid 0
        if workspace is not None:
            args += ["--bind", str(workspace), str(GUEST_WORKSPACE)]
        elif self.workspace is None:
            raise ValueError("this sandbox has no workspace of its own; pass one")
        args += ["--ro-bind", str(self.runner), RUNNER_GUEST]
        args += ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETFCAP"]
        args += ["--chdir", str(GUEST_WORKSPACE), "--", RUNNER_GUEST, str(socket_fd)]
        args.append(str(self.limits.tmp_bytes))
        return Spawn(args, {}, pass_fds=[socket_fd], user=self.run_as, group=self.run_as)

    def session_argv(self, command: str, cwd: PurePosixPath) -> list[str]:
        """What a session's runner runs for ``command``: bash with the prelude, reporting
        on descriptor 3."""
        script = prelude(self.limits, root=str(GUEST_WORKSPACE), report_fd=3)
        cwd_text = str(GUEST_WORKSPACE / cwd)
        return [BASH, "--noprofile", "--norc", "-c", script, SHELL_NAME, command, cwd_text]

    def spawn(
        self,
        command: str,
        cwd: PurePosixPath,
        env: Mapping[str, str],
        report_fd: int,
        workspace: Path | None = None,
    ) -> Spawn:
        script = prelude(self.limits, root=str(GUEST_WORKSPACE), report_fd=report_fd)
        tail = [script, SHELL_NAME, command, str(GUEST_WORKSPACE / cwd)]
        if workspace is None:
            if self.workspace is None:
                raise ValueError("this sandbox has no workspace of its own; pass one")
            args = [*self._fixed, *tail]
        else:
            bind = ["--bind", str(workspace), str(GUEST_WORKSPACE)]
            args = [*self._mounts, *bind, *self._command, *tail]
        return Spawn(args, dict(env), pass_fds=[report_fd], user=self.run_as, group=self.run_as)


class UnsafeHostShell:
    """Commands straight on the host, as the sidecar's user: no isolation at all.

    For development only (``[shell] mode = "host"``); the sidecar logs a warning when it
    starts this way. The policy and the limits still apply; nothing else does.
    """

    def __init__(self, workspace: Path, limits: ShellLimits) -> None:
        self.workspace = workspace
        self.limits = limits
        self.root = PurePosixPath(workspace)

    def close(self) -> None:
        """Nothing to release."""

    def spawn(
        self,
        command: str,
        cwd: PurePosixPath,
        env: Mapping[str, str],
        report_fd: int,
        workspace: Path | None = None,
    ) -> Spawn:
        if workspace is not None:  # a host-mode workspace never names the principal
            raise ValueError("commands on the host work in the one workspace only")
        script = prelude(self.limits, root=str(self.workspace), report_fd=report_fd)
        argv = [BASH, "--noprofile", "--norc", "-c", script, SHELL_NAME, command]
        argv.append(str(self.workspace / cwd))
        return Spawn(argv, dict(env), cwd=str(self.workspace), pass_fds=[report_fd])


_PASSWD = (
    b"root:x:0:0:root:/root:/usr/sbin/nologin\n"
    b"sandbox:x:1000:1000:toolcage sandbox:/tmp:/bin/bash\n"
    b"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
_GROUP = b"root:x:0:\nsandbox:x:1000:\nnogroup:x:65534:\n"
