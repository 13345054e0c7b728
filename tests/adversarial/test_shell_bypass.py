"""Shell-policy bypass attempts, from ``shell_bypass_corpus.json``: the sentinel never runs.

Every command tries to run ``/workspace/sentinel.sh`` (which appends to
``/workspace/SENTINEL_RAN``) or another program outside the allowlist. Each is checked
against the default policy and an extended one (shells, ``eval``, ``exec``, ``command``,
``builtin`` and ``time`` allowlisted too) -- or, for cases marked ``"syntax": "all"``,
against the extended allowlist with every syntax switch on. What a policy lets through is
then run in the real sidecar and sandbox, and afterwards the sentinel's mark must not exist.

The sidecar checks each command itself, so every refused case is also sent to it as a raw
client would, in frames on its socket: it must answer with a policy refusal and run nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ShellConfig, ShellPolicy, ShellPolicyViolation, ShellSyntax
from toolcage.policies._config import parse_config
from toolcage.runtime import Runtime
from toolcage.runtime.selftest import load_corpus
from toolcage.sidecar import POLICY_REFUSED
from toolcage.sidecar._protocol import encode_frame
from toolcage.sidecar._sandbox import BubblewrapSandbox
from toolcage.sidecar._service import ShellService

from ..sidecar.conftest import (
    SANDBOX_UID,
    TEST_LIMITS,
    Daemon,
    give_to_sandbox,
    make_workspace,
    read_frame,
    start_daemon,
    stop_daemon,
)

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

CORPUS = load_corpus("shell_bypass_corpus.json")
CASES = [
    pytest.param(case, id=f"{group['name']}: {case['command']!r}")
    for group in CORPUS["groups"]
    for case in group["cases"]
]
REFUSED = [
    pytest.param(case, id=f"{group['name']}: {case['command']!r}")
    for group in CORPUS["groups"]
    for case in group["cases"]
    if case["expect"] == "refuse"
]
EXTENDED_ALLOW = ("sh", "bash", "dash", "eval", "exec", "command", "builtin", "time")
ALL_SYNTAX = ShellSyntax(
    expansions=True,
    substitutions=True,
    arithmetic=True,
    globs=True,
    tilde=True,
    braces=True,
    redirections="any",
    heredocs=True,
    background=True,
    subshells=True,
)
DEFAULT = ShellPolicy.from_config(ShellConfig())
EXTENDED = ShellPolicy.from_config(ShellConfig(extra_allow=EXTENDED_ALLOW))
EVERYTHING = ShellPolicy.from_config(ShellConfig(extra_allow=EXTENDED_ALLOW, syntax=ALL_SYNTAX))
RUN_SECONDS = TEST_LIMITS.max_timeout
"""A run case gets the longest timeout there is: it must finish, not be cut short."""

SENTINEL = "#!/bin/sh\necho ran >> /workspace/SENTINEL_RAN\n"
GOOD_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
FILES = {
    "sentinel.sh": SENTINEL,
    "hook.sh": SENTINEL,
    "good.config": GOOD_CONFIG,
    "evil.config": GOOD_CONFIG + "\tfsmonitor = /workspace/sentinel.sh\n\tpager = ./sentinel.sh\n",
    "filter.config": GOOD_CONFIG
    + '[filter "x"]\n\tclean = ./sentinel.sh\n\tsmudge = ./sentinel.sh\n'
    + '[diff "x"]\n\ttextconv = ./sentinel.sh\n',
    "ident.config": GOOD_CONFIG + "[user]\n\tname = t\n\temail = t@t\n",
    "attributes.txt": "* filter=x diff=x\n",
    "list.txt": "./sentinel.sh\n",
    "sentinel.awk": 'BEGIN { system("./sentinel.sh") }\n',
    "script.sed": "1e ./sentinel.sh\n",
    "bare-alternates.config": GOOD_CONFIG.replace("bare = false", "bare = true")
    + "\talternateRefsCommand = /workspace/sentinel.sh\n",
    "update-instead.config": GOOD_CONFIG
    + "[receive]\n\tdenyCurrentBranch = updateInstead\n"
    + '[filter "x"]\n\tsmudge = /workspace/sentinel.sh\n\tclean = /workspace/sentinel.sh\n',
    "push-to-checkout.config": GOOD_CONFIG + "[receive]\n\tdenyCurrentBranch = updateInstead\n",
}


@pytest.fixture(scope="module")
def corpus_workspace() -> Iterator[Path]:
    workspace = make_workspace()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    (workspace / "sentinel.sh").chmod(0o755)
    (workspace / "hook.sh").chmod(0o755)
    host_git(workspace, "init", "-q")
    host_git(workspace, "add", "sentinel.sh", "list.txt")
    host_git(workspace, "commit", "-q", "-m", "initial")
    host_git(workspace, "tag", "initial")
    subprocess.run(
        ["tar", "-C", str(workspace), "-cf", str(workspace / "sentinel.tar"), "sentinel.sh"],
        check=True,
    )
    give_to_sandbox(workspace)
    yield workspace
    shutil.rmtree(workspace.parent, ignore_errors=True)


@pytest.fixture(scope="module")
def corpus_daemon(corpus_workspace: Path) -> Iterator[Daemon]:
    """The most permissive policy of the three: whatever any of them admits reaches bash."""
    config = ShellConfig(
        workspace=corpus_workspace,
        limits=TEST_LIMITS,
        extra_allow=EXTENDED_ALLOW,
        syntax=ALL_SYNTAX,
    )
    running = start_daemon(config)
    yield running
    stop_daemon(running)


@pytest.fixture(scope="module")
def default_daemon(corpus_workspace: Path) -> Iterator[Daemon]:
    """The same workspace behind the default policy."""
    running = start_daemon(ShellConfig(workspace=corpus_workspace, limits=TEST_LIMITS))
    yield running
    stop_daemon(running)


def host_git(workspace: Path, *args: str) -> None:
    subprocess.run(
        [
            *("git", "-C", str(workspace), "-c", "safe.directory=*"),
            *("-c", "user.name=t", "-c", "user.email=t@t", *args),
        ],
        check=True,
        capture_output=True,
    )


def reset_repository(workspace: Path) -> None:
    """Undo what a previous case planted in the repository (and the repositories beside it)."""
    (workspace / "SENTINEL_RAN").unlink(missing_ok=True)  # each case is judged on its own
    (workspace / ".git" / "config").write_text(GOOD_CONFIG)
    for hook in (workspace / ".git" / "hooks").iterdir():
        if not hook.name.endswith(".sample"):
            hook.unlink()
    (workspace / ".gitattributes").unlink(missing_ok=True)
    for other in ("sub", "t", "t.git", "c"):
        shutil.rmtree(workspace / other, ignore_errors=True)
    host_git(workspace, "reset", "-q", "--soft", "initial")
    host_git(workspace, "read-tree", "HEAD")
    give_to_sandbox(workspace)


def verdict(policy: ShellPolicy, command: str) -> ShellPolicyViolation | None:
    try:
        policy.check(command)
    except ShellPolicyViolation as violation:
        return violation
    return None


async def run_in_sandbox(daemon: Daemon, command: str) -> dict[str, Any]:
    async with daemon.client() as client:
        return await client.request(
            "exec",
            session="adversary-" + uuid.uuid4().hex[:6],
            command=command,
            timeout=RUN_SECONDS,
        )


def plant_repository_with_a_command(workspace: Path) -> None:
    """A bare repository ``t.git`` whose config names the sentinel as a command."""
    reset_repository(workspace)
    host_git(workspace, "init", "-q", "--bare", "t.git")
    (workspace / "t.git" / "config").write_text(FILES["bare-alternates.config"])
    alternates = workspace / "t.git" / "objects" / "info" / "alternates"
    alternates.write_text("/workspace/.git/objects\n")
    give_to_sandbox(workspace)


def raw_exec(daemon: Daemon, command: str, **extra: Any) -> dict[str, Any]:
    """One ``exec`` in frames on the daemon's socket, as any process of its user could send."""
    request = {"id": 7, "op": "exec", "session": "raw-" + uuid.uuid4().hex[:6]}
    with daemon.handshake() as sock:
        sock.sendall(encode_frame({**request, "command": command, "timeout": 30, **extra}))
        reply = read_frame(sock)
    assert reply is not None
    return reply


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 590
    assert CORPUS["count"] == len(CASES)


async def run_unchecked(workspace: Path, command: str) -> dict[str, Any]:
    """``command`` in the sandbox without the daemon's policy (controls only)."""
    run_as = SANDBOX_UID if os.geteuid() == 0 else None
    sandbox = BubblewrapSandbox(workspace, TEST_LIMITS, network=False, run_as=run_as)
    service = ShellService(sandbox, TEST_LIMITS)
    try:
        result = await service.exec("control", command, RUN_SECONDS, 4096)
    finally:
        await service.shutdown()
        sandbox.close()
    assert not result["timed_out"], result
    return result


async def test_the_sentinel_is_detected_when_it_runs(corpus_workspace: Path) -> None:
    mark = corpus_workspace / "SENTINEL_RAN"
    result = await run_unchecked(corpus_workspace, "./sentinel.sh")
    assert result["exit_code"] == 0
    assert mark.read_text() == "ran\n"
    mark.unlink()


async def test_repository_hooks_would_run_without_the_git_guard(corpus_workspace: Path) -> None:
    """The unguarded git binary runs a planted hook: the guard is what stops it.

    The control runs in the sandbox without the daemon (whose policy refuses a program
    named by path), from a freshly reset repository, and is given the longest timeout:
    a command cut short by its timeout never reaches the hook, so the result is checked
    before the mark is.
    """
    reset_repository(corpus_workspace)
    mark = corpus_workspace / "SENTINEL_RAN"
    command = (
        "cp hook.sh .git/hooks/pre-commit && "
        "/run/toolcage/git -c user.name=a -c user.email=b@c commit -q --allow-empty -m control"
    )
    try:
        result = await run_unchecked(corpus_workspace, command)
        assert result["exit_code"] == 0, result
        assert mark.read_text() == "ran\n"
    finally:
        mark.unlink(missing_ok=True)
        reset_repository(corpus_workspace)


async def test_another_repositorys_config_runs_when_its_receive_pack_runs(
    corpus_workspace: Path,
) -> None:
    """The planted repository is live: its own receive-pack runs the command it names."""
    plant_repository_with_a_command(corpus_workspace)
    mark = corpus_workspace / "SENTINEL_RAN"
    command = (
        "/run/toolcage/git -c protocol.file.allow=always push -q "
        "--receive-pack='/run/toolcage/git receive-pack' ./t.git HEAD:refs/heads/x"
    )
    try:
        await run_unchecked(corpus_workspace, command)
        assert mark.exists()
    finally:
        mark.unlink(missing_ok=True)
        reset_repository(corpus_workspace)


@pytest.mark.parametrize("case", CASES)
async def test_the_sentinel_never_runs(case: dict[str, str], corpus_daemon: Daemon) -> None:
    command, expect = case["command"], case["expect"]
    if case.get("syntax") == "all":
        policy_refusal = verdict(EVERYTHING, command)
        if expect == "refuse":
            assert policy_refusal is not None, "the policy with every switch on let it through"
            return
    else:
        default, extended = verdict(DEFAULT, command), verdict(EXTENDED, command)
        if expect == "refuse":
            assert default is not None, "the default policy let it through"
            assert extended is not None, "the extended policy let it through"
            assert default.reason
            return
        policy_refusal = default if expect == "run" else extended
    assert policy_refusal is None, f"expected it to pass the policy: {policy_refusal}"
    reset_repository(corpus_daemon.workspace)
    result = await run_in_sandbox(corpus_daemon, command)
    assert not result["timed_out"], result
    assert not (corpus_daemon.workspace / "SENTINEL_RAN").exists(), result


@pytest.mark.parametrize("case", REFUSED)
def test_a_raw_client_on_the_socket_meets_the_same_refusal(
    case: dict[str, str], corpus_daemon: Daemon, default_daemon: Daemon
) -> None:
    """The sidecar refuses what the policy refuses, whoever sends it and however."""
    daemon = corpus_daemon if case.get("syntax") == "all" else default_daemon
    # a NUL cannot travel as one argument: the request is malformed before any policy
    expected = "bad_request" if "\x00" in case["command"] else POLICY_REFUSED
    for extra in ({}, {"background": True}):
        reply = raw_exec(daemon, case["command"], **extra)
        assert reply["ok"] is False, reply
        assert reply["error"]["code"] == expected, reply
    assert not (daemon.workspace / "SENTINEL_RAN").exists()


async def test_an_endless_loop_is_stopped_at_its_timeout(corpus_daemon: Daemon) -> None:
    """``while true`` passes the default policy; the command's timeout kills it."""
    async with corpus_daemon.client() as client:
        session = "loop-" + uuid.uuid4().hex[:6]
        looped = await client.request(
            "exec", session=session, command="while true; do true; done", timeout=1
        )
        assert looped["timed_out"], looped
        after = await client.request("exec", session=session, command="echo alive", timeout=30)
        assert after["stdout"] == "alive\n", after


class TestArithmeticAcrossCalls:
    """A value planted by one call and evaluated as arithmetic by the next."""

    PLANT = "export y='a[$(./sentinel.sh)]'"
    USES = ("echo $((y))", "echo $(($y))", "echo $((${y} + 1))", "echo $[y]")

    async def test_the_sidecar_refuses_the_second_call(self, corpus_daemon: Daemon) -> None:
        mark = corpus_daemon.workspace / "SENTINEL_RAN"
        async with corpus_daemon.client() as client:
            session = "arith-" + uuid.uuid4().hex[:6]
            planted = await client.request("exec", session=session, command=self.PLANT, timeout=30)
            assert planted["exit_code"] == 0
            for use in self.USES:
                reply = raw_exec(corpus_daemon, use, session=session)
                assert reply["error"]["code"] == POLICY_REFUSED, reply
        assert not mark.exists()

    async def test_the_runtime_refuses_it_as_permission_denied(
        self, corpus_workspace: Path
    ) -> None:
        config = parse_config(
            {
                "shell": {
                    "workspace": str(corpus_workspace),
                    "syntax": {"arithmetic": True, "expansions": True, "substitutions": True},
                },
                "approval": {"auto_approve": ["shell_exec"]},
            },
            base_dir=corpus_workspace.parent,
        )
        async with Runtime.from_config(config) as runtime:
            planted = await runtime.execute("shell_exec", {"command": self.PLANT})
            assert not planted.is_error, planted.envelope()
            for use in self.USES:
                envelope = (await runtime.execute("shell_exec", {"command": use})).envelope()
                assert envelope["error_type"] == "permission_denied", envelope
                assert "arithmetic" in envelope["message"]
        assert not (corpus_workspace / "SENTINEL_RAN").exists()


class TestGitAcrossRepositories:
    """Through the door users use: only echo and git allowed, a push into a planted repository."""

    PUSHES = (
        "git push -q ./t.git HEAD:refs/heads/x",
        "git push -q file:///workspace/t.git HEAD:refs/heads/x",
        "git remote add evil ./t.git && git push -q evil HEAD:refs/heads/x",
    )

    @pytest.fixture
    async def runtime(self, corpus_workspace: Path) -> AsyncIterator[Runtime]:
        config = parse_config(
            {
                "shell": {"workspace": str(corpus_workspace), "allow": ["echo", "git"]},
                "approval": {"auto_approve": ["shell_exec"]},
            },
            base_dir=corpus_workspace.parent,
        )
        async with Runtime.from_config(config) as running:
            yield running

    @pytest.mark.parametrize("push", PUSHES)
    async def test_the_other_repositorys_command_never_runs(
        self, push: str, runtime: Runtime, corpus_workspace: Path
    ) -> None:
        plant_repository_with_a_command(corpus_workspace)
        try:
            result = await runtime.execute("shell_exec", {"command": push})
            assert not result.is_error, result.envelope()
            assert result.details["exit_code"] != 0
            assert "transport 'file' not allowed" in result.output_text
            assert not (corpus_workspace / "SENTINEL_RAN").exists()
        finally:
            (corpus_workspace / "SENTINEL_RAN").unlink(missing_ok=True)
            reset_repository(corpus_workspace)
