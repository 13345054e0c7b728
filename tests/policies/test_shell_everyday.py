"""The default shell policy against everyday developer commands (``everyday_commands.json``).

The corpus is what a developer types in a repository -- search, git, text processing,
file management, loops and tests, here-documents, build and test runs, long chains -- as
written, not tuned to the policy. At least 97% of it must pass the policy of a default
config; the refused ones are printed with their reasons (``pytest -s`` shows them).
"""

from __future__ import annotations

import json
from pathlib import Path

from toolcage.policies import ShellPolicy, ShellPolicyViolation
from toolcage.policies._config import parse_config

CORPUS = json.loads((Path(__file__).parent / "everyday_commands.json").read_text("utf-8"))
COMMANDS = [command for group in CORPUS["groups"] for command in group["commands"]]
REQUIRED_SHARE = 0.97


def default_policy(tmp_path: Path) -> ShellPolicy:
    config = parse_config({}, base_dir=tmp_path)
    return ShellPolicy.from_config(config.shell)


def refusals(policy: ShellPolicy) -> list[tuple[str, str]]:
    found = []
    for command in COMMANDS:
        try:
            policy.check(command)
        except ShellPolicyViolation as exc:
            found.append((command, str(exc)))
    return found


def test_the_corpus_is_large_and_counted() -> None:
    assert len(COMMANDS) >= 200
    assert CORPUS["count"] == len(COMMANDS)
    assert len(set(COMMANDS)) == len(COMMANDS)


def test_the_default_policy_runs_nearly_all_of_it(tmp_path: Path) -> None:
    refused = refusals(default_policy(tmp_path))
    share = 1 - len(refused) / len(COMMANDS)
    report = "\n".join(f"  {command!r}: {reason}" for command, reason in refused)
    print(
        f"\n{len(COMMANDS) - len(refused)}/{len(COMMANDS)} ({share:.1%}) pass; refused:\n{report}"
    )
    assert share >= REQUIRED_SHARE, report


def test_what_is_refused_is_refused_by_design(tmp_path: Path) -> None:
    """Every refusal is one the policy makes on purpose: programs outside the allowlist,
    expansions whose value it cannot know, redirections out of the workspace."""
    reasons = [reason for _, reason in refusals(default_policy(tmp_path))]
    by_design = ("not in the allowlist", "not enabled", "must be literal", "must stay inside")
    assert all(any(part in reason for part in by_design) for reason in reasons), reasons


def test_the_commands_a_new_user_met_refused_now_pass(tmp_path: Path) -> None:
    policy = default_policy(tmp_path)
    for command in (
        "grep -rn 'def main' --include=*.py .",
        "grep -c foo src/*.py",
        "ls -d */",
        "[ -f README.md ] && echo yes",
        "test -f README.md",
        'for f in src/*.py; do wc -l "$f"; done',
        "cat <<'EOF' > notes.txt\nhello\nEOF",
        " && ".join(f"echo {i}" for i in range(30)),
        "echo $HOME",
        "ls ~",
        'echo "$HOME"',
        'ls "$PWD"',
        "echo $((1 + 1))",
    ):
        policy.check(command)
