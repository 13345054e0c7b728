"""The seam between the engine and the attack classes: what a class is given, what it
gives back, and the one value that registers it.

An attack class is data, an :class:`AttackClass`: its name, why the config may have
nothing of it (*skip*), the harmless call that must work before it attacks (*control*,
:mod:`._controls`) and the attack itself. Each takes the same :class:`AttackContext`, so
the engine (:mod:`._engine`) holds one table of classes and one loop over it; a new class
is one module with one ``attack`` entry point and one row in that table.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolcage.policies import ToolcageConfig

from .._runtime import Runtime
from ._recorder import Bait
from ._report import Finding
from ._scratch import Scratch


@dataclass(frozen=True, slots=True)
class AttackContext:
    """Everything a class may use: the same for every class of a run."""

    runtime: Runtime
    """Built with ``Runtime.from_config`` from the scratch config, every approval granted."""
    config: ToolcageConfig
    """The operator's config as written (keys are blamed on it, not on the scratch copy)."""
    config_path: Path | None
    """Where the operator's config was read from (``None``: the embedded default)."""
    scratch: Scratch
    """The scratch world the runtime acts on, and its canary."""
    bait: Bait
    """The recording HTTP servers on loopback."""
    within_budget: Callable[[], bool]
    """False once the run's time budget is spent: a class checks it between attacks."""


@dataclass(slots=True)
class Outcome:
    """What one class found, and what of it did not run."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Parts left out for a reason that is no fault (``class: why``)."""
    not_run: list[str] = field(default_factory=list)
    """Parts whose control failed (``class: why``): the run does not pass."""


Skip = Callable[[AttackContext], "str | None"]
Control = Callable[[AttackContext], Awaitable["str | None"]]
Attack = Callable[[AttackContext], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class AttackClass:
    """One attack class, as the engine runs it: skip check, control, attack."""

    name: str
    skip: Skip
    """Why the config has nothing of this class, or ``None`` when it has."""
    control: Control
    """``None`` when the harmless call worked, else why it did not."""
    attack: Attack
