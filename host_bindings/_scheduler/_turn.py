"""The seam between the scheduler and whoever runs a scheduled turn.

A host writes a :class:`TurnRunner` -- any async callable from :class:`TurnRequest` to
:class:`TurnOutcome` -- and hands it to :class:`~._service.Scheduler`;
:class:`toolcage.runtime.ScheduledTurns` is the one that runs each goal as an agent turn.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ._model import Schedule


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a :class:`TurnRunner` is asked to run."""

    schedule: Schedule
    """The schedule as it was when the occurrence was claimed (its goal is the prompt,
    its ``principal`` the identity the turn runs as)."""
    run_id: str
    """The run being recorded (``run-{uuid4}``)."""
    occurrence_at: datetime
    """The occurrence being run."""


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """What a run produced."""

    output: str
    """The full output (the model's answer); stored, paged by ``schedule_run_output``."""
    summary: str | None = None
    """A short summary; ``None``: the start of ``output``."""
    cost: float = 0.0
    """What the turn cost."""
    report: bool = True
    """Whether there is something to tell the user (for ``conditional`` notification)."""
    error: str | None = None
    """Why the turn did not complete (a budget ran out, say): the run is recorded
    ``failed`` with this summary, its output kept."""


class TurnRunner(Protocol):
    """Runs one scheduled turn. Raising records the run ``failed`` with the error."""

    def __call__(self, request: TurnRequest, /) -> Awaitable[TurnOutcome]: ...
