"""The run: build the scratch world, attack it class by class, report.

Each class gets the same runtime, built with ``Runtime.from_config`` from the scratch
config (:mod:`._scratch`) exactly as a host builds one, privileged calls approved (the
selftest stands in for an approver who says yes to everything, the worst case). A class
the config has nothing of is skipped; any other first runs its control (:mod:`._controls`),
and one whose control fails is reported as not run instead of attacking a runtime that
refuses everything. A class checks the time budget between attacks; what it had no time
for is listed as skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from toolcage.policies import load_config

from .._approval import Approval, ApprovalRequest, CallbackApproval
from .._runtime import Runtime
from . import _controls, _paths, _principals, _secrets, _shell, _ssrf
from ._recorder import Bait, admit
from ._report import Report
from ._scratch import scratch_config

CLASSES = ("paths", "races", "ssrf", "shell", "secrets", "principals")
"""The attack classes, in the order they run."""

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
) -> Report:
    """Attack the config at ``config_path`` (``None``: the embedded default).

    Raises :class:`~toolcage.policies.ConfigError` for a config that does not load or fit.
    """
    started = time.monotonic()
    wanted = [c for c in CLASSES if c in set(only)]
    config = load_config(config_path)
    path = None if config_path is None else Path(config_path)
    report = Report()
    scratch = scratch_config(config)
    bait = Bait()
    scratch.config = admit(scratch.config, tuple(r.address for r in bait.all()))
    scratch.config = _secrets.bind_control(scratch.config, bait.bound.address)

    def within_budget() -> bool:
        return time.monotonic() - started < budget

    def say(what: str) -> None:
        if progress is not None:
            progress(what)

    try:
        runtime = Runtime.from_config(scratch.config, approval=CallbackApproval(_approve))
        async with runtime:
            for attack in wanted:
                say(attack)
                if not within_budget():
                    report.skipped.append(f"{attack}: the time budget ({budget:g} s) ran out")
                    continue
                skip = _controls.skip_reason(attack, config, runtime)
                if skip is not None:
                    report.skipped.append(f"{attack}: {skip}")
                    continue
                failed = await _controls.control(attack, runtime, scratch)
                if failed is not None:
                    report.not_run.append(f"{attack}: {failed}")
                    continue
                if attack == "paths":
                    report.findings += _paths.exposure(config, path, scratch)
                    report.findings += await _paths.traversal(runtime, scratch, within_budget)
                elif attack == "races":
                    report.findings += await _paths.races(runtime, scratch, within_budget)
                elif attack == "ssrf":
                    report.findings += await _ssrf.attack(runtime, config.egress, within_budget)
                    canary = (scratch.outside / "secret.txt", scratch.canary)
                    found, skipped = await _ssrf.redirects(
                        runtime, config.egress, bait.redirector, canary, within_budget
                    )
                    report.findings += found
                    report.skipped += skipped
                elif attack == "shell":
                    shell = scratch.config.shell
                    base = scratch.config.base_dir
                    report.findings += await _shell.attack(runtime, shell, base, within_budget)
                elif attack == "secrets":
                    report.findings += _secrets.attack(config)
                    found, skipped = await _secrets.sent(
                        runtime, config, scratch, bait, within_budget
                    )
                    report.findings += found
                    report.skipped += skipped
                elif attack == "principals":
                    try:
                        report.findings += await _principals.attack(
                            runtime, config, scratch, within_budget
                        )
                    except _principals.ControlFailed as exc:
                        report.not_run.append(f"{attack}: {exc}")
                        continue
                if not within_budget():
                    report.skipped.append(f"{attack}: cut short by the time budget ({budget:g} s)")
        if config.mcp.servers:
            report.skipped.append("mcp: the config's MCP servers were not started")
    finally:
        bait.close()
        scratch.remove()
    report.seconds = time.monotonic() - started
    return report
