"""Time as an argument: the scheduler reads ``now`` and waits only through a :class:`Clock`.

:class:`SystemClock` is the real one; :class:`ManualClock` moves only when a test says so,
and wakes every waiter whose instant it passes, so tests advance time instead of sleeping.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

import anyio


@runtime_checkable
class Clock(Protocol):
    """The current instant, and a way to wait for a later one."""

    def now(self) -> datetime:
        """The current instant, timezone-aware, in UTC."""
        ...

    async def sleep_until(self, moment: datetime) -> None:
        """Return at ``moment`` or soon after (at once if it has passed)."""
        ...


class SystemClock:
    """The host's wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep_until(self, moment: datetime) -> None:
        await anyio.sleep(max(0.0, (moment - self.now()).total_seconds()))


class ManualClock:
    """A clock that stands still until :meth:`advance` or :meth:`set`::

    clock = ManualClock(datetime(2026, 3, 28, tzinfo=UTC))
    clock.advance(timedelta(minutes=5))
    """

    def __init__(self, start: datetime) -> None:
        self._now = start.astimezone(UTC)
        self._waiters: list[anyio.Event] = []

    def now(self) -> datetime:
        return self._now

    @property
    def waiting(self) -> int:
        """How many tasks wait on this clock: a test knows a service has settled (its
        poll loop and lease keepers asleep) before it moves time on."""
        return len(self._waiters)

    def set(self, moment: datetime) -> None:
        """Jump to ``moment`` (forward or back) and wake every waiter to look again."""
        self._now = moment.astimezone(UTC)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.set()

    def advance(self, step: timedelta) -> None:
        self.set(self._now + step)

    async def sleep_until(self, moment: datetime) -> None:
        while self._now < moment:
            waiter = anyio.Event()
            self._waiters.append(waiter)
            try:
                await waiter.wait()
            finally:  # a cancelled sleeper waits no more
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
