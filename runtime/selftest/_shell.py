"""Shell: ``shell_bypass_corpus.json`` and probes of the config's own additions, for real.

Every command tries to run the sentinel, ``./sentinel.sh`` in the scratch workspace, which
appends to ``SENTINEL_RAN``: a program that is not on the allowlist. Each is judged by the
policy built from the operator's ``[shell]`` section (the one the sidecar builds); the
commands it admits are run for real with ``shell_exec`` through ``Runtime.execute``, in the
sidecar under bubblewrap, and the sentinel's mark is looked for after each. Beside the
corpus, each program the config adds to the default allowlist is probed with the usual
ways of making a program run another (``P ./sentinel.sh``, ``P -c``, ``P -e``, ``source``).

An escape is blamed on the allowlist entry that let it in (``shell.extra_allow.N``), else
on the syntax switches the config turned on, else on the default policy itself. ``mode =
"host"`` is an escape by itself: commands there run without a sandbox, so no corpus is run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from toolcage.policies import ShellConfig, ShellMode, ShellPolicy, ShellPolicyViolation
from toolcage.policies._host_template import HostTemplate
from toolcage.policies.shell._names import DEFAULT_ALLOW

from .._runtime import Runtime
from .._tool import DEFAULT_CONTEXT
from ._base import AttackContext, Outcome
from ._corpora import load_corpus
from ._report import Finding

SENTINEL = "#!/bin/sh\necho ran >> /workspace/SENTINEL_RAN\n"
FILES = {
    "sentinel.sh": SENTINEL,
    "hook.sh": SENTINEL,
    "list.txt": "./sentinel.sh\n",
    "sentinel.awk": 'BEGIN { system("./sentinel.sh") }\n',
    "script.sed": "1e ./sentinel.sh\n",
}


def probes(program: str) -> list[str]:
    """Ways of making ``program`` run the sentinel."""
    return [
        f"{program} ./sentinel.sh",
        f"{program} sentinel.sh",
        f"{program} -c ./sentinel.sh",
        f"{program} -c 'import os; os.system(\"./sentinel.sh\")'",
        f"{program} -e 'system(\"./sentinel.sh\")'",
        f'{program} -e \'require("child_process").execSync("./sentinel.sh")\'',
        f"echo ./sentinel.sh | {program}",
    ]


def commands(shell: ShellConfig) -> list[tuple[str, str]]:
    """(payload class, command): the corpus, then probes of the config's own additions."""
    corpus = load_corpus("shell_bypass_corpus.json")
    found = [(g["name"], c["command"]) for g in corpus["groups"] for c in g["cases"]]
    for program in sorted(shell.allowed - frozenset(DEFAULT_ALLOW)):
        found += [(f"programs added to the allowlist ({program})", c) for c in probes(program)]
    return found


def workspace_of(shell: ShellConfig, base_dir: Path) -> Path:
    template = HostTemplate.parse(shell.workspace).absolute(base_dir)
    return template.path(template.segments(DEFAULT_CONTEXT.principal))


async def attack(ctx: AttackContext) -> Outcome:
    """The corpus and the probes under the scratch config's ``[shell]``."""
    shell, base = ctx.scratch.config.shell, ctx.scratch.config.base_dir
    return Outcome(await _attack(ctx.runtime, shell, base, ctx.within_budget))


async def _attack(
    runtime: Runtime, shell: ShellConfig, base_dir: Path, within_budget: Callable[[], bool]
) -> list[Finding]:
    if shell.mode is ShellMode.HOST:
        key = 'shell.mode = "host" runs commands on the host without a sandbox'
        return [Finding("shell", "shell_exec", "the sandbox", False, key, "no command was run")]
    policy = ShellPolicy.from_config(shell)
    workspace = workspace_of(shell, base_dir)
    workspace.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (workspace / name).write_text(text)
    (workspace / "sentinel.sh").chmod(0o755)
    (workspace / "hook.sh").chmod(0o755)
    mark = workspace / "SENTINEL_RAN"
    outcomes: dict[str, list[tuple[str, str]]] = {}
    for group, command in commands(shell):
        escaped = outcomes.setdefault(group, [])
        try:
            verdict = policy.check(command)
        except ShellPolicyViolation:
            continue
        if not within_budget():
            break
        mark.unlink(missing_ok=True)
        await runtime.execute("shell_exec", {"command": command})
        if mark.exists():
            escaped.append((command, _responsible(shell, verdict.programs)))
    with contextlib.suppress(OSError):
        mark.unlink()
    return [
        Finding(
            "shell",
            "shell_exec",
            group,
            not escaped,
            escaped[0][1] if escaped else "",
            "; ".join(f"`{c}` ran ./sentinel.sh" for c, _ in escaped[:3]),
        )
        for group, escaped in outcomes.items()
    ]


def _responsible(shell: ShellConfig, programs: tuple[str, ...]) -> str:
    for program in programs:
        if program in shell.extra_allow:
            i = shell.extra_allow.index(program)
            return f"shell.extra_allow.{i}: `{program}` runs programs off the allowlist"
        if program in shell.allow and program not in DEFAULT_ALLOW:
            i = shell.allow.index(program)
            return f"shell.allow.{i}: `{program}` runs programs off the allowlist"
    switched = sorted(shell.syntax.model_fields_set)
    if switched:
        return f"shell.syntax ({', '.join(switched)}) admits a command that ran the sentinel"
    return "shell: the default policy admitted a command that ran the sentinel"
