"""How a scheduler runs: :class:`SchedulerSettings`, built from ``[scheduler]`` or by hand."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from toolcage.policies import SchedulerConfig


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """How a scheduler runs (the operator's ``[scheduler]`` ``lease_secs``, ``poll_secs``
    and ``max_concurrent_runs``)::

        SchedulerSettings(lease=timedelta(seconds=60), max_concurrent_runs=8)
    """

    lease: timedelta = timedelta(seconds=60)
    """How long a claimed run stays this scheduler's without renewal; renewed every third
    of it while the run lasts. After a crash its schedule waits at most this long."""
    poll: timedelta = timedelta(seconds=1)
    """How often :meth:`~._service.Scheduler.run` scans for due schedules."""
    max_concurrent_runs: int = 4
    """Runs in flight at once in this scheduler."""
    max_output_chars: int = 200_000
    """A run's stored output is cut to this many characters."""

    def __post_init__(self) -> None:
        # An embedder's mistake, not the operator's: [scheduler] reports its own errors.
        if self.lease <= timedelta(0) or self.poll <= timedelta(0):
            raise ValueError(f"lease and poll must be positive, not {self.lease}, {self.poll}")
        if self.max_concurrent_runs < 1 or self.max_output_chars < 1:
            raise ValueError("max_concurrent_runs and max_output_chars must be at least 1")

    @classmethod
    def from_config(cls, config: SchedulerConfig) -> SchedulerSettings:
        """The settings of the ``[scheduler]`` section (validated there)."""
        return cls(
            lease=timedelta(seconds=config.lease_secs),
            poll=timedelta(seconds=config.poll_secs),
            max_concurrent_runs=config.max_concurrent_runs,
        )
