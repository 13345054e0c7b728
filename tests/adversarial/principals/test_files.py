"""Files stay with their user when the operator asks: ``{user}`` in a mount's host and the
shell's workspace gives each user directories of their own, through every door.

Each config here is run through ``Runtime.from_config`` + ``execute``: the file tools,
``vault_copyto`` and ``shell_exec`` of two users (``ada``, ``bob``) and hostile user ids.
The shell runs in the real sidecar; as root its commands run as uid 65534, and one test
runs the daemon itself as that unprivileged uid, where it makes and owns the workspaces.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio._backends._asyncio
import pytest
import toolcage.sidecar.__main__ as daemon_main
from toolcage.policies import ConfigError, PrincipalError, path_segment
from toolcage.runtime import Runtime, ToolExecutionContext, ToolResult
from toolcage.runtime.shell import ShellExecTool
from toolcage.sidecar import SidecarClient, SidecarError

from ...sidecar.conftest import scratch
from ._cast import (
    ADA,
    ADA_REVIEWER,
    ADA_WORKER,
    BOB,
    BOB_REVIEWER,
    config_with_agents,
    context,
)

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

TIERS = '{ read_only = "ro", side_effecting = "rw", privileged = "rw" }'
PER_USER = f"""
[[mounts.areas]]
host = "users/{{user}}/workspace"
guest = "/workspace"
tiers = {TIERS}
create = true

[[mounts.areas]]
host = "users/{{user}}/shared"
guest = "/shared"
tiers = {TIERS}
create = true

[[mounts.areas]]
host = "users/{{user}}/tmp"
guest = "/tmp"
tiers = {TIERS}
create = true

[shell]
workspace = "users/{{user}}/workspace"

[approval]
auto_approve = ["shell_exec"]

[state.vault]
dir = "vault"
grants = {{ lead = ["*"] }}
"""
"""Every mount and the shell workspace per user; lead may copy any vault item."""

SHARED = """
[approval]
auto_approve = ["shell_exec"]
"""
"""The built-in mounts and workspace: one set of directories for every user."""

HOSTILE_IDS = [
    "..",
    "../bob",
    "a/b",
    "%2e%2e",
    "%2E%2E",  # what '..' escapes to: its own directory, not '..''s
    "x" * 256,  # the longest id: cut and ended with a digest
    "ádá",
    "用户",
    ".",
    "bob ",  # one space away from bob
]


@dataclass
class Box:
    runtime: Runtime
    root: Path

    def users(self) -> Path:
        return self.root / "users"

    def home(self, user: str) -> Path:
        return self.users() / path_segment(user)

    async def call(self, tool: str, ctx: ToolExecutionContext, **args: Any) -> ToolResult:
        return await self.runtime.execute(tool, args, ctx)

    async def ok(self, tool: str, ctx: ToolExecutionContext, **args: Any) -> str:
        result = await self.call(tool, ctx, **args)
        assert not result.is_error, result.envelope()
        return result.output_text

    async def shell(self, ctx: ToolExecutionContext, command: str) -> tuple[int, str]:
        result = await self.call("shell_exec", ctx, command=command)
        assert result.error is None or result.error.kind.value != "permission_denied", (
            result.envelope()
        )
        return int(result.envelope()["details"]["exit_code"]), result.output_text


def project() -> Path:
    """A project directory a root sidecar's command uid may pass through (as /srv/app is)."""
    root = scratch("files-")
    root.chmod(0o711)
    return root


@contextlib.asynccontextmanager
async def box(body: str) -> AsyncIterator[Box]:
    root = project()
    (root / "vault").mkdir()
    (root / "vault/api-key").write_text("sk-ada-only\n")
    async with Runtime.from_config(config_with_agents(root, body)) as runtime:
        yield Box(runtime, root)


def command_uid() -> int:
    """The host uid sandboxed commands run as (a root sidecar drops to nobody)."""
    return 65534 if os.geteuid() == 0 else os.geteuid()


class TestFileTools:
    async def test_what_a_user_writes_no_other_user_reads_lists_or_finds(self) -> None:
        async with box(PER_USER) as b:
            await b.ok("file_write", ADA, path="/workspace/plan.txt", content="ada's plan\n")
            for stranger in (BOB, BOB_REVIEWER):
                read = await b.call("file_read", stranger, path="/workspace/plan.txt")
                assert read.is_error
                assert "does not exist" in read.output_text
                assert "plan.txt" not in await b.ok("file_list", stranger, path="/workspace")
            found = await b.ok("file_search", BOB, path="/workspace", query="plan")
            assert "plan" not in found
            # the same user through another agent, or a worker beneath her session, shares
            # the user's directory
            for same_user in (ADA_REVIEWER, ADA_WORKER):
                plan = await b.ok("file_read", same_user, path="/workspace/plan.txt")
                assert plan == "ada's plan\n"
            assert (b.home("ada") / "workspace/plan.txt").read_text() == "ada's plan\n"
            assert not (b.home("bob") / "workspace/plan.txt").exists()

    async def test_users_may_use_the_same_names_without_meeting(self) -> None:
        async with box(PER_USER) as b:
            await b.ok("file_write", ADA, path="/workspace/a.txt", content="ada")
            await b.ok("file_write", BOB, path="/workspace/a.txt", content="bob")
            await b.ok("file_edit", BOB, path="/workspace/a.txt", old_string="bob", new_string="B")
            assert await b.ok("file_read", ADA, path="/workspace/a.txt") == "ada"
            assert await b.ok("file_read", BOB, path="/workspace/a.txt") == "B"

    async def test_each_user_s_directories_are_made_owner_only_on_first_use(self) -> None:
        async with box(PER_USER) as b:
            assert not b.users().exists()  # nothing is made before a call needs it
            await b.ok("file_list", ADA, path="/workspace")
            assert sorted(os.listdir(b.users())) == ["ada"]
            for made in (b.users(), b.home("ada"), b.home("ada") / "workspace"):
                assert stat.S_IMODE(made.stat().st_mode) == 0o700, made

    async def test_a_link_planted_for_a_user_is_refused_not_followed(self) -> None:
        async with box(PER_USER) as b:
            await b.ok("file_write", BOB, path="/workspace/secret", content="bob's")
            b.users().joinpath("mallory").symlink_to(b.home("bob"))
            result = await b.call("file_read", context("mallory"), path="/workspace/secret")
            assert result.is_error
            assert "without following a link" in result.output_text


class TestVault:
    async def test_a_copy_lands_in_the_caller_s_shared_only(self) -> None:
        async with box(PER_USER) as b:
            await b.ok("vault_copyto", ADA, item="api-key", path="/shared/key")
            assert (b.home("ada") / "shared/key").read_text() == "sk-ada-only\n"
            assert not (b.home("bob") / "shared").exists() or not os.listdir(
                b.home("bob") / "shared"
            )
            read = await b.call("file_read", BOB, path="/shared/key")
            assert read.is_error
            assert "does not exist" in read.output_text
            assert "key" not in await b.ok("file_list", BOB, path="/shared")
            # bob's own copy to the same path is new: nothing of ada's was in the way
            copied = await b.call("vault_copyto", BOB, item="api-key", path="/shared/key")
            assert copied.envelope()["details"]["created"] is True, copied.envelope()

    async def test_a_copy_to_tmp_stays_with_its_user_too(self) -> None:
        async with box(PER_USER) as b:
            await b.ok("vault_copyto", ADA, item="api-key", path="/tmp/k")
            assert (b.home("ada") / "tmp/k").exists()
            assert (await b.call("file_read", BOB, path="/tmp/k")).is_error


class TestShell:
    async def test_a_file_one_user_s_command_writes_is_invisible_to_another(self) -> None:
        async with box(PER_USER) as b:
            code, _ = await b.shell(ADA, "echo ada-secret > f")
            assert code == 0
            code, listing = await b.shell(BOB, "ls -a")
            assert code == 0
            assert "f\n" not in listing.split("[exit code")[0]
            code, _ = await b.shell(BOB, "cat f")
            assert code != 0
            assert (await b.call("file_read", BOB, path="/workspace/f")).is_error
            assert await b.ok("file_read", ADA, path="/workspace/f") == "ada-secret\n"
            assert (b.home("ada") / "workspace/f").read_text() == "ada-secret\n"
            assert not (b.home("bob") / "workspace/f").exists()

    async def test_files_the_file_tools_write_are_the_user_s_command_s_files(self) -> None:
        async with box(PER_USER) as b:
            await b.ok("file_write", ADA, path="/workspace/notes.md", content="# ada\n")
            code, text = await b.shell(ADA, "cat notes.md")
            assert (code, text.split("\n[exit")[0]) == (0, "# ada")
            code, _ = await b.shell(BOB, "cat notes.md")
            assert code != 0

    async def test_the_workspace_is_given_to_the_command_uid(self) -> None:
        async with box(PER_USER) as b:
            await b.shell(ADA, "touch made")
            workspace = b.home("ada") / "workspace"
            assert workspace.stat().st_uid == command_uid()
            assert stat.S_IMODE(workspace.stat().st_mode) == 0o700
            assert (workspace / "made").stat().st_uid == command_uid()
            above = stat.S_IMODE(b.home("ada").stat().st_mode)
            # a root sidecar's bubblewrap (uid 65534) passes through, never lists
            assert above == (0o701 if os.geteuid() == 0 else 0o700)

    async def test_sessions_and_jobs_of_one_user_are_not_another_s(self) -> None:
        async with box(PER_USER) as b:
            await b.shell(ADA, "mkdir -p deep/er && cd deep/er")
            assert (await b.shell(ADA, "pwd"))[1].startswith("/workspace/deep/er\n")
            # bob's session of the same name starts at the root of bob's own workspace
            assert (await b.shell(BOB, "pwd"))[1].startswith("/workspace\n")
            started = await b.call("shell_exec", ADA, command="echo job-out", background=True)
            job = started.envelope()["details"]["job_id"]
            stolen = await b.call("shell_job", BOB, job_id=job)
            assert stolen.is_error
            assert "no background job" in stolen.output_text

    async def test_a_client_at_the_socket_names_an_id_never_a_directory(self) -> None:
        async with box(PER_USER) as b:
            await b.shell(ADA, "mkdir -p deep && cd deep")
            async with raw_client(b.runtime) as client:
                # ada's session name claimed for bob: a new session in bob's workspace
                session = ADA.principal.key("default")
                answer = await client.request(
                    "exec", session=session, user="bob", agent="lead", command="pwd", timeout=10
                )
                assert answer["created"] is True
                assert answer["stdout"] == "/workspace\n"
                # the same name for ada is her session, where she left it
                hers = await client.request(
                    "exec", session=session, user="ada", agent="lead", command="pwd", timeout=10
                )
                assert hers["created"] is False
                assert hers["stdout"] == "/workspace/deep\n"
                for hostile in ("../ada", "..", "ada/.."):
                    await client.request(
                        "exec", session="s", user=hostile, agent="x", command="touch x", timeout=10
                    )
                    assert (b.users() / path_segment(hostile) / "workspace/x").exists()
                    assert not (b.home("ada") / "workspace/x").exists()
                with pytest.raises(SidecarError, match="must name its 'user'"):
                    await client.request("exec", session="s", command="true", timeout=10)
                with pytest.raises(SidecarError, match="user: is empty"):
                    await client.request("exec", session="s", user="", command="true", timeout=10)


class TestHostileIds:
    async def test_each_id_gets_its_own_escaped_directory_for_files_vault_and_shell(
        self,
    ) -> None:
        async with box(PER_USER) as b:
            await b.ok("file_write", BOB, path="/workspace/bob.txt", content="bob")
            for user in HOSTILE_IDS:
                ctx = context(user)
                await b.ok("file_write", ctx, path="/workspace/mine", content=user)
                await b.ok("vault_copyto", ctx, item="api-key", path="/shared/k")
                code, _ = await b.shell(ctx, "echo shell > by-shell")
                assert code == 0, user
                home = b.home(user)
                assert home.parent == b.users(), home
                assert len(home.name) <= 96, home
                assert (home / "workspace/mine").read_text() == user
                assert (home / "workspace/by-shell").read_text() == "shell\n"
                assert (home / "shared/k").exists()
                assert (await b.call("file_read", ctx, path="/workspace/bob.txt")).is_error
            owners = {path_segment(user): user for user in HOSTILE_IDS}
            assert len(owners) == len(HOSTILE_IDS)  # no two ids share a directory
            assert sorted(os.listdir(b.users())) == sorted([*owners, "bob"])
            for segment, user in owners.items():  # each file is in its own user's directory
                assert (b.users() / segment / "workspace/mine").read_text() == user
            assert set(os.listdir(b.root)) <= {"toolcage.toml", "users", "vault", ".toolcage"}
            assert sorted(os.listdir(b.home("bob") / "workspace")) == ["bob.txt"]

    def test_an_id_longer_than_a_principal_takes_is_refused_before_any_path(self) -> None:
        with pytest.raises(PrincipalError, match="300 characters long; the limit is 256"):
            context("x" * 300)


class TestSharedDefault:
    async def test_without_a_placeholder_every_user_shares_the_directories(self) -> None:
        async with box(SHARED) as b:
            await b.ok("file_write", ADA, path="/workspace/f", content="shared")
            assert await b.ok("file_read", BOB, path="/workspace/f") == "shared"
            assert (b.root / "workspace/f").read_text() == "shared"
            code, text = await b.shell(BOB, "cat f")
            assert (code, text.split("\n[exit")[0]) == (0, "shared")
            assert not (b.root / "users").exists()


class TestConfig:
    def test_mount_areas_that_could_meet_for_some_user_are_refused(self) -> None:
        body = """
[[mounts.areas]]
host = "users/{user}"
guest = "/workspace"
tiers = { read_only = "ro" }
create = true

[[mounts.areas]]
host = "users/shared"
guest = "/shared"
tiers = { read_only = "ro" }
create = true
"""
        with pytest.raises(ConfigError, match=r"mounts\.areas\.1\.host: .*users/shared may be"):
            Runtime.from_config(config_with_agents(project(), body))

    def test_a_workspace_holding_a_user_s_mount_is_refused(self) -> None:
        body = """
[[mounts.areas]]
host = "users/{user}/files"
guest = "/workspace"
tiers = { read_only = "ro" }
create = true

[shell]
workspace = "users/{user}"
"""
        with pytest.raises(ConfigError, match=r"shell\.workspace: .*users/\{user\} may be"):
            Runtime.from_config(config_with_agents(project(), body))

    def test_a_vault_a_user_id_could_name_is_refused(self) -> None:
        root = project()
        (root / "users/vault").mkdir(parents=True)
        body = """
[[mounts.areas]]
host = "users/{user}"
guest = "/workspace"
tiers = { read_only = "ro" }
create = true

[state.vault]
dir = "users/vault"
"""
        with pytest.raises(ConfigError, match=r"state\.vault\.dir: .* overlaps the mounted"):
            Runtime.from_config(config_with_agents(root, body))

    def test_toolcage_check_describes_the_per_user_workspace(self) -> None:
        root = project()
        (root / "vault").mkdir()
        config = config_with_agents(root, PER_USER)
        done = subprocess.run(
            [sys.executable, "-m", "toolcage.runtime", "check", "--config", str(config)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        lines = {line.split()[1]: line for line in done.stdout.splitlines() if line.strip()}
        assert lines["sidecar"].startswith("ok"), done.stdout + done.stderr
        assert lines["workspace"].startswith("ok"), done.stdout
        assert "users/{user}/workspace" in lines["workspace"]


@contextlib.asynccontextmanager
async def raw_client(runtime: Runtime) -> AsyncIterator[SidecarClient]:
    """A client of the runtime's own sidecar, at its socket: what any process of the
    runtime's uid could be."""
    tool = runtime.registry.get("shell_exec")
    assert isinstance(tool, ShellExecTool)
    assert tool.sidecar is not None
    launcher = tool.sidecar.client.launcher
    assert launcher is not None
    assert launcher.socket_path is not None
    async with SidecarClient(socket_path=launcher.socket_path) as client:
        yield client


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start the daemon as another uid")
class TestUnprivilegedSidecar:
    """The daemon as an unprivileged uid (the runtime's own, on a host without root):
    it makes each workspace itself, owner-only, and gives nothing away."""

    def test_each_user_works_in_a_directory_of_the_daemon_s_own(self) -> None:
        root = project()
        users = root / "users"
        users.mkdir(mode=0o700)
        os.chown(users, 65534, 65534)
        config = root / "toolcage.toml"
        config.write_text('[shell]\nworkspace = "users/{user}/workspace"\n')
        # sync, and forked before any event loop runs: the child runs one of its own
        with daemon_as_nobody(config, root / "socket") as socket_path:
            anyio.run(_ada_and_bob, socket_path)
        workspace = users / "ada/workspace"
        assert (workspace / "f").read_text() == "ada\n"
        assert not (users / "bob/workspace/f").exists()
        assert (users / path_segment("../ada") / "workspace/x").exists()
        for made in (users / "ada", workspace, users / "bob"):
            info = made.stat()
            assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (65534, 0o700), made


async def _ada_and_bob(socket_path: Path) -> None:
    async with SidecarClient(socket_path=socket_path) as client:
        for user, command in (("ada", "echo ada > f"), ("../ada", "touch x")):
            done = await client.request(
                "exec", session="s", user=user, agent="lead", command=command, timeout=30
            )
            assert done["exit_code"] == 0, done
        other = await client.request(
            "exec", session="s", user="bob", agent="lead", command="cat f", timeout=30
        )
        assert other["exit_code"] != 0, other


@contextlib.contextmanager
def daemon_as_nobody(config: Path, socket_dir: Path) -> Iterator[Path]:
    """``toolcage sidecar --config CONFIG`` as uid 65534, from a forked child (the
    interpreter's files need not be readable for that uid: everything is imported first),
    accepting root's connections; its socket path."""
    socket_dir.mkdir(mode=0o700)
    os.chown(socket_dir, 65534, 65534)
    socket_path = socket_dir / "shell.sock"
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 2
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            sys.stdout = os.fdopen(write_fd, "w")  # "ready" goes to the parent, not pytest
            argv = ["--socket", str(socket_path), "--config", str(config), "--allow-uid", "0"]
            code = daemon_main.main(argv)
        finally:
            os._exit(code)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as ready:
            line = ready.readline()
        assert line.strip() == b"ready", line
        yield socket_path
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
