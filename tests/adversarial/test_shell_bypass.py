"""Shell-policy bypass attempts, from ``shell_bypass_corpus.json``: the sentinel never runs.

Every command tries to run ``/workspace/sentinel.sh`` (which appends to
``/workspace/SENTINEL_RAN``) or another program outside the allowlist. Each is checked
against the default policy and an extended one (shells, ``eval``, ``exec``, ``command``,
``builtin`` and ``time`` allowlisted too); what a policy lets through is then run in the
real sidecar and sandbox, and afterwards the sentinel's mark must not exist.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolcage.policies import ShellConfig, ShellPolicy, ShellPolicyViolation

from ..sidecar.conftest import (
    TEST_LIMITS,
    Daemon,
    give_to_sandbox,
    make_workspace,
    start_daemon,
    stop_daemon,
)

pytestmark = [pytest.mark.anyio, pytest.mark.adversarial]

CORPUS = json.loads((Path(__file__).parent / "shell_bypass_corpus.json").read_text("utf-8"))
CASES = [
    pytest.param(case, id=f"{group['name']}: {case['command']!r}")
    for group in CORPUS["groups"]
    for case in group["cases"]
]
DEFAULT = ShellPolicy.from_config(ShellConfig())
EXTENDED = ShellPolicy.from_config(
    ShellConfig(extra_allow=("sh", "bash", "dash", "eval", "exec", "command", "builtin", "time"))
)

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
}


@pytest.fixture(scope="module")
def corpus_daemon() -> Iterator[Daemon]:
    workspace = make_workspace()
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    (workspace / "sentinel.sh").chmod(0o755)
    (workspace / "hook.sh").chmod(0o755)
    host_git(workspace, "init", "-q")
    host_git(workspace, "add", "sentinel.sh", "list.txt")
    host_git(workspace, "commit", "-q", "-m", "initial")
    subprocess.run(
        ["tar", "-C", str(workspace), "-cf", str(workspace / "sentinel.tar"), "sentinel.sh"],
        check=True,
    )
    give_to_sandbox(workspace)
    running = start_daemon(ShellConfig(workspace=workspace, limits=TEST_LIMITS))
    yield running
    stop_daemon(running)
    shutil.rmtree(workspace.parent, ignore_errors=True)


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
    """Undo what a previous case planted in the repository."""
    (workspace / ".git" / "config").write_text(GOOD_CONFIG)
    for hook in (workspace / ".git" / "hooks").iterdir():
        if not hook.name.endswith(".sample"):
            hook.unlink()
    (workspace / ".gitattributes").unlink(missing_ok=True)
    shutil.rmtree(workspace / "sub", ignore_errors=True)
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
            "exec", session="adversary-" + uuid.uuid4().hex[:6], command=command, timeout=10
        )


def test_the_corpus_is_large_enough() -> None:
    assert len(CASES) >= 150
    assert CORPUS["count"] == len(CASES)


async def test_the_sentinel_is_detected_when_it_runs(corpus_daemon: Daemon) -> None:
    mark = corpus_daemon.workspace / "SENTINEL_RAN"
    result = await run_in_sandbox(corpus_daemon, "./sentinel.sh")
    assert result["exit_code"] == 0
    assert mark.read_text() == "ran\n"
    mark.unlink()


async def test_repository_hooks_would_run_without_the_git_guard(corpus_daemon: Daemon) -> None:
    """The unguarded git binary runs a planted hook: the guard is what stops it."""
    mark = corpus_daemon.workspace / "SENTINEL_RAN"
    command = (
        "cp hook.sh .git/hooks/pre-commit && "
        "/run/toolcage/git -c user.name=a -c user.email=b@c commit -q --allow-empty -m control"
    )
    try:
        await run_in_sandbox(corpus_daemon, command)
        assert mark.exists()
    finally:
        mark.unlink(missing_ok=True)
        reset_repository(corpus_daemon.workspace)


@pytest.mark.parametrize("case", CASES)
async def test_the_sentinel_never_runs(case: dict[str, str], corpus_daemon: Daemon) -> None:
    command, expect = case["command"], case["expect"]
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
    assert not (corpus_daemon.workspace / "SENTINEL_RAN").exists(), result
