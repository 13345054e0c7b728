"""The ``[scheduler]`` section: the budgets and limits of scheduled agent turns.

::

    [scheduler]
    enabled = true                 # false: no schedule_* tools
    min_interval_secs = 60         # cron and interval cadences fire at most this often
    max_turns = 10                 # model calls per scheduled run
    max_cost = 0.50                # spend per scheduled run (the [loop] prices); unset: none
    lease_secs = 60                # a run's lease, renewed every third of it
    poll_secs = 1.0                # how often the service scans for due schedules
    max_concurrent_runs = 4        # runs in flight at once in one scheduler process

The budgets are the operator's alone: no tool argument can raise them. The scheduler tools
need the state store, so they exist only while ``[state]`` is enabled too.

The last three shape the service (``toolcage scheduler``, or a host's ``Scheduler`` built
with ``SchedulerSettings.from_config``). A run's lease is how long a schedule whose
scheduler died mid-run stays blocked before another records that run failed and fires it
again; it is renewed every third of it, so it must outlast a renewal that waits on a busy
database (the state store's 30 s busy wait at most): hence at least 30 s.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SchedulerConfig(_Section):
    """The ``[scheduler]`` section."""

    enabled: bool = True
    """Whether the scheduler tools exist (they also need ``[state]`` enabled)."""
    min_interval_secs: int = Field(60, ge=1)
    """Least seconds between two firings of a cron or interval schedule."""
    max_turns: int = Field(10, gt=0)
    """Model calls a scheduled run may make."""
    max_cost: float | None = Field(None, gt=0)
    """Spend per scheduled run, at the ``[loop]`` prices; unset: no limit."""
    lease_secs: int = Field(60, ge=30, le=86_400)
    """Seconds a claimed run stays its scheduler's without renewal (renewed every third)."""
    poll_secs: float = Field(1.0, ge=0.05, le=300)
    """Seconds between two scans for due schedules."""
    max_concurrent_runs: int = Field(4, ge=1, le=256)
    """Scheduled runs in flight at once in one scheduler process."""
