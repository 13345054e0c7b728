"""The ``[scheduler]`` section: the budgets and limits of scheduled agent turns.

::

    [scheduler]
    enabled = true                 # false: no schedule_* tools
    min_interval_secs = 60         # cron and interval cadences fire at most this often
    max_turns = 10                 # model calls per scheduled run
    max_cost = 0.50                # spend per scheduled run (the [loop] prices); unset: none

The budgets are the operator's alone: no tool argument can raise them. The scheduler tools
need the state store, so they exist only while ``[state]`` is enabled too.
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
