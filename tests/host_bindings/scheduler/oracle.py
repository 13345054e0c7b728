"""An independent oracle of cron firings: walk every UTC minute and apply the DST rule.

It shares no code with the scheduler: its own reading of the (numeric) cron forms the tests
use, and the rule stated plainly --

* real time (minute or hour field starts with ``*``): a minute fires when its local time
  matches;
* fixed times: the local clock's high-water mark only moves forward; a minute fires when
  the local times it newly reaches (one, or a whole gap after a spring-forward) include a
  match, and a repeated hour reaches nothing new.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta

MINUTE = timedelta(minutes=1)


def _values(field: str, low: int, high: int) -> set[int]:
    found: set[int] = set()
    for item in field.split(","):
        span, _, step = item.partition("/")
        if span == "*":
            first, last = low, high
        else:
            first_text, _, last_text = span.partition("-")
            first = int(first_text)
            last = int(last_text) if last_text else first
        found.update(range(first, last + 1, int(step) if step else 1))
    return found


@dataclass(frozen=True)
class Wall:
    """Which local minutes a numeric cron expression names (day fields: ``*`` only)."""

    minutes: frozenset[int]
    hours: frozenset[int]

    @classmethod
    def of(cls, expression: str) -> Wall:
        minute, hour, day, month, weekday = expression.split()
        assert (day, month, weekday) == ("*", "*", "*"), "the oracle reads times of day only"
        return cls(frozenset(_values(minute, 0, 59)), frozenset(_values(hour, 0, 23)))

    def __call__(self, local: datetime) -> bool:
        return local.minute in self.minutes and local.hour in self.hours


def cron_oracle(
    matches: Wall, real_time: bool, zone_name: str, start: datetime, end: datetime
) -> list[datetime]:
    """The firings in ``[start, end]`` (UTC, whole minutes)."""
    zone = zoneinfo.ZoneInfo(zone_name)
    moment = start.replace(second=0, microsecond=0)
    if moment < start:
        moment += MINUTE
    reached = (moment - MINUTE).astimezone(zone).replace(tzinfo=None)
    found = []
    while moment <= end:
        local = moment.astimezone(zone).replace(tzinfo=None)
        if real_time:
            fires = matches(local)
        else:
            fires = False
            wall = reached + MINUTE
            while wall <= local:
                fires = fires or matches(wall)
                wall += MINUTE
            reached = max(reached, local)
        if fires:
            found.append(moment)
        moment += MINUTE
    return found


def interval_oracle(created: datetime, seconds: int, end: datetime) -> list[datetime]:
    """Every ``seconds`` of elapsed time after ``created``, up to ``end``."""
    found, moment = [], created + timedelta(seconds=seconds)
    while moment <= end:
        found.append(moment)
        moment += timedelta(seconds=seconds)
    return found
