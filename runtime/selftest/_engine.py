"""The run: build the scratch world, attack it class by class, report.

Each class gets the same runtime, built with ``Runtime.from_config`` from the scratch
config (:mod:`._scratch`) exactly as a host builds one, privileged calls approved (the
selftest stands in for an approver who says yes to everything, the worst case). A class
the config has nothing of is skipped; any other first runs its control (:mod:`._controls`),
and one whose control fails is reported as not run instead of attacking a runtime that
refuses everything. A class checks the time budget between attacks; a class the budget
left no time for, or cut short, is reported as not run (naming ``--budget``): what it did
not try did not hold, so the run does not pass.

The classes are one table, :data:`ATTACKS`, of :class:`~._base.AttackClass` values (name,
skip check, control, attack), each attack the one entry point of its module; the run is
one loop over it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from toolcage.policies import load_config

from .._approval import Approval, ApprovalRequest, CallbackApproval
from .._runtime import Runtime
from . import _controls, _paths, _principals, _races, _secrets, _shell, _ssrf
from ._base import AttackClass, AttackContext
from ._recorder import Bait, admit
from ._report import Report
from ._scratch import scratch_config

ATTACKS = (
    AttackClass("paths", _controls.no_file_tool, _controls.files, _paths.attack),
    AttackClass("races", _controls.no_file_tool, _controls.files, _races.attack),
    AttackClass("ssrf", _controls.no_network_tool, _controls.network, _ssrf.attack),
    AttackClass("shell", _controls.no_shell, _controls.shell, _shell.attack),
    AttackClass("secrets", _controls.no_secret, _controls.secret_bindings, _secrets.attack),
    AttackClass(
        "principals", _controls.nothing_per_user, _controls.in_each_probe, _principals.attack
    ),
)
"""The attack classes, in the order they run."""
CLASSES = tuple(c.name for c in ATTACKS)
"""Their names, as ``--only`` takes them."""

Progress = Callable[[str], None]


def _approve(request: ApprovalRequest) -> Approval:
    del request
    return Approval.ALLOW_ONCE


async def run_selftest(
    config_path: str | Path | None,
    *,
    only: Iterable[str] = CLASSES,
    budget: float = 50.0,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Report:
    """Attack the config at ``config_path`` (``None``: the embedded default).

    ``clock`` measures the budget (seconds). Raises :class:`~toolcage.policies.ConfigError`
    for a config that does not load or fit.
    """
    started = clock()
    wanted = [c for c in ATTACKS if c.name in set(only)]
    config = load_config(config_path)
    path = None if config_path is None else Path(config_path)
    report = Report()
    scratch = scratch_config(config)
    bait = Bait()
    scratch.config = admit(scratch.config, tuple(r.address for r in bait.all()))
    scratch.config = _secrets.bind_control(scratch.config, bait.bound.address)

    limit = f"(--budget {budget:g} s)"

    def within_budget() -> bool:
        return clock() - started < budget

    def say(what: str) -> None:
        if progress is not None:
            progress(what)

    try:
        runtime = Runtime.from_config(
            scratch.config, approval=CallbackApproval(_approve), channel=bait.mailbox
        )
        async with runtime:
            ctx = AttackContext(runtime, config, path, scratch, bait, within_budget)
            for attack in wanted:
                say(attack.name)
                if not within_budget():
                    report.not_run.append(f"{attack.name}: the time budget ran out {limit}")
                    continue
                skip = attack.skip(ctx)
                if skip is not None:
                    report.skipped.append(f"{attack.name}: {skip}")
                    continue
                failed = await attack.control(ctx)
                if failed is not None:
                    report.not_run.append(f"{attack.name}: {failed}")
                    continue
                outcome = await attack.attack(ctx)
                report.findings += outcome.findings
                report.skipped += outcome.skipped
                report.not_run += outcome.not_run
                if not outcome.not_run and not within_budget():
                    report.not_run.append(f"{attack.name}: cut short by the time budget {limit}")
        if config.mcp.servers:
            report.skipped.append("mcp: the config's MCP servers were not started")
    finally:
        bait.close()
        scratch.remove()
    report.seconds = clock() - started
    return report
