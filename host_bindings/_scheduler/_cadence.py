"""Cadences: when a schedule fires, in its time zone, across DST changes.

``cron`` is a standard 5-field expression or macro (:mod:`._cron`) read as wall-clock time
in the schedule's zone (:mod:`._zones`). Wall-clock times become instants by cron's own
rule (Vixie cron, cronie), which depends on how often the expression runs:

* **hourly or more often** -- the minute or the hour field starts with ``*`` (``* * * * *``,
  ``*/15 * * * *``, ``0 * * * *``, ``0 */2 * * *``, ``*/10 9 * * *``, ``@hourly``): the
  expression follows real elapsed time. It fires at every instant whose local time
  matches: a time in a spring-forward gap does not happen, a time in a fall-back's
  repeated hour happens twice. ``0 * * * *`` in America/New_York fires 25 times, one
  hour apart, on the fall-back day and 23 times on the spring-forward day;
  ``*/15 * * * *`` never pauses or doubles.
* **at fixed local times** -- every other expression (``0 9 * * 1-5``, ``30 1 * * *``,
  ``0 8-18 * * *``, ``@daily``): each matching local time runs once. A time that happens
  twice runs at its first occurrence: ``30 1 * * *`` in America/New_York on 2026-11-01
  runs at 01:30 EDT (05:30Z), not again at 01:30 EST. A time in a gap runs at the end of
  the gap, the first instant after it: ``30 2 * * *`` in Europe/Paris on 2026-03-29 runs
  at 03:00 CEST (01:00Z); several times in one gap run once, at that instant.

``interval`` fires every N seconds of elapsed time whatever the zone, first N seconds after
creation. ``once`` is one RFC 3339 instant (:mod:`._forms`); one without an offset is read
in the zone by the fixed-time rule. Cron and interval cadences must not fire more often
than the minimum interval, measured in real elapsed time: a cron expression is checked at
its closest two consecutive firings, including those around every DST change of its zone
in the next eight years.

After downtime, :meth:`Cadence.catch_up` finds the latest due occurrence directly and
counts what it replaces exactly: interval cadences by arithmetic, cron ones per stretch of
one UTC offset and per day (:meth:`~._cron.CronSpec.count`).
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ._cron import CronSpec
from ._forms import MAX_AHEAD, excerpt, interval_seconds, parse_instant
from ._model import CadenceType, ScheduleError, ScheduleValidationError
from ._zones import Segment, canonical_zone, segments, stored_zone

_TINY = timedelta(microseconds=1)
_YEAR = timedelta(days=366)
_HORIZON_YEARS = 10
"""How far :meth:`Cadence.next_after` looks (a valid cron fires within 8 years)."""
_CHECK_YEARS = 8
"""The DST changes whose firings the minimum-interval check looks at."""


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What to run after downtime, and what it skips."""

    occurrence: datetime
    """The latest due occurrence: the one that runs."""
    skipped: int
    """How many earlier due occurrences do not run."""
    first_skipped: datetime | None
    last_skipped: datetime | None


@dataclass(frozen=True, slots=True)
class Cadence:
    """A validated cadence: its normalised ``value`` and how to find occurrences."""

    kind: CadenceType
    value: str
    zone: zoneinfo.ZoneInfo
    cron: CronSpec | None = field(default=None, repr=False)
    seconds: int = field(default=0, repr=False)
    moment: datetime | None = field(default=None, repr=False)

    @classmethod
    def stored(cls, kind: CadenceType, value: str, zone_name: str) -> Cadence:
        """The cadence of a stored schedule (see :func:`~._zones.stored_zone`); a
        :class:`~._model.ScheduleError` if it cannot be read."""
        zone = stored_zone(zone_name)
        try:
            if kind is CadenceType.INTERVAL:
                return cls(kind, value, zone, seconds=interval_seconds(value))
            if kind is CadenceType.ONCE:
                return cls(kind, value, zone, moment=_stored_instant(value, zone))
            return cls(kind, value, zone, cron=CronSpec.parse(value))
        except ScheduleValidationError as exc:
            raise ScheduleError(f"the stored cadence cannot be read: {exc}") from None

    def next_after(self, after: datetime) -> datetime | None:
        """The first occurrence strictly after ``after`` (UTC); ``None`` if none is left."""
        if self.kind is CadenceType.INTERVAL:
            following = after + timedelta(seconds=self.seconds)
            return following
        if self.cron is not None:
            return _CronRule(self.cron, self.zone).next_after(after)
        return self.moment if self.moment is not None and self.moment > after else None

    def catch_up(self, due: datetime, now: datetime) -> CatchUp:
        """From the occurrence ``due`` (at or before ``now``): the latest occurrence at or
        before ``now`` (the one to run) and the earlier ones it replaces."""
        if self.kind is CadenceType.INTERVAL:
            step = timedelta(seconds=self.seconds)
            behind = max(0, (now - due) // step)
            latest = due + behind * step
            if not behind:
                return CatchUp(due, 0, None, None)
            return CatchUp(latest, behind, due, latest - step)
        if self.kind is CadenceType.ONCE or self.cron is None:
            return CatchUp(due, 0, None, None)
        rule = _CronRule(self.cron, self.zone)
        found = rule.last_in(due + _TINY, now)
        if found is None:
            return CatchUp(due, 0, None, None)
        skipped = rule.count_in(due + _TINY, now)  # the later ones, and ``due`` itself
        last = rule.last_in(due + _TINY, found - _TINY) or due
        return CatchUp(found, skipped, due, last)


def parse_cadence(
    kind: CadenceType, value: object, zone_name: str, *, now: datetime, min_interval_secs: int
) -> Cadence:
    """The cadence of ``kind`` from the tool argument ``value`` in the zone ``zone_name``
    (a canonical IANA name, see :func:`~._zones.canonical_zone`), or a validation error
    on the field at fault saying what would be accepted."""
    zone = zoneinfo.ZoneInfo(canonical_zone(zone_name))
    if kind is CadenceType.INTERVAL:
        seconds = interval_seconds(value)
        if seconds < min_interval_secs:
            raise ScheduleValidationError(
                "cadence_value",
                f"every {seconds} s is too often; the minimum interval is {min_interval_secs} s",
            )
        return Cadence(kind, str(seconds), zone, seconds=seconds)
    if not isinstance(value, str) or not value.strip():
        raise ScheduleValidationError(
            "cadence_value", f"must be a non-empty string for a {kind} cadence"
        )
    if kind is CadenceType.ONCE:
        text = value.strip()
        moment = _instant(text, zone)
        if moment <= now:
            raise ScheduleValidationError(
                "cadence_value",
                f"{excerpt(text)} is not in the future (now is {_z(now)});"
                " give a later RFC 3339 time",
            )
        if moment > now + MAX_AHEAD:
            raise ScheduleValidationError(
                "cadence_value",
                f"{excerpt(text)} is more than {MAX_AHEAD.days} days ahead (now is {_z(now)})",
            )
        return Cadence(kind, text, zone, moment=moment)
    spec = CronSpec.parse(value)
    expression = value.strip().lower() if value.strip().startswith("@") else " ".join(value.split())
    _check_spacing(expression, _CronRule(spec, zone), now, min_interval_secs)
    return Cadence(kind, expression, zone, cron=spec)


def wall_to_instant(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The instant of naive wall-clock time ``wall`` in ``zone`` (UTC) by the fixed-time
    rule: its first occurrence, or the end of the gap it falls in."""
    guess = wall.replace(tzinfo=UTC)
    for segment in segments(zone, guess - timedelta(days=1), guess + timedelta(days=1)):
        low = _naive(segment.start + segment.before)
        if low <= wall < _naive(segment.end + segment.offset):
            return max((wall - segment.offset).replace(tzinfo=UTC), segment.start)
    raise AssertionError("the segments cover the day around the wall-clock time")


class _CronRule:
    """A cron expression's occurrences in a zone, by the DST rule of its kind.

    Each stretch of one offset (a :class:`~._zones.Segment`) maps the wall-clock times
    ``[start + offset, end + offset)`` to instants by subtracting its offset. A segment
    after a change adds one occurrence at its ``start`` when a matching time lies between
    the wall clock before and after the change (a gap, for fixed times; just the first
    time after the change, for real-time ones), and a fixed-time expression skips the
    times a fall-back repeats (those below ``start + before``)."""

    def __init__(self, spec: CronSpec, zone: zoneinfo.ZoneInfo) -> None:
        self.spec = spec
        self.zone = zone

    def _walls(self, segment: Segment) -> tuple[datetime, datetime, datetime]:
        """The wall-clock times of ``segment``: the lowest that runs at its start, the one
        at its start, the end (exclusive)."""
        at = _naive(segment.start + segment.offset)
        low = at if self.spec.real_time else _naive(segment.start + segment.before)
        return low, at, _naive(segment.end + segment.offset)

    def _fires_at_start(self, segment: Segment) -> bool:
        low, at, _ = self._walls(segment)
        return low <= at and self.spec.first(low, at + _TINY) is not None

    def next_after(self, after: datetime) -> datetime | None:
        start = after
        for _ in range(_HORIZON_YEARS):
            end = start + _YEAR
            if end.year > 9998:
                return None
            since = max(after, start - _TINY)  # instants before ``start`` were searched
            for segment in segments(self.zone, start, end):
                if segment.end <= since:
                    continue
                if segment.start > since and self._fires_at_start(segment):
                    return segment.start
                low, at, high = self._walls(segment)
                wall = self.spec.first(
                    max(low, at + _TINY, _naive(since + segment.offset) + _TINY), high
                )
                if wall is not None:
                    return _aware(wall - segment.offset)
            start = end
        return None

    def last_in(self, low: datetime, high: datetime) -> datetime | None:
        """The latest occurrence in ``[low, high]``."""
        if high < low:
            return None
        for segment in reversed(segments(self.zone, low, high + _TINY)):
            if segment.start > high:
                continue
            if segment.end <= low:
                break
            floor, at, end = self._walls(segment)
            wall = self.spec.last(
                max(floor, at + _TINY, _naive(low + segment.offset)),
                min(end, _naive(high + segment.offset) + _TINY),
            )
            if wall is not None:
                return _aware(wall - segment.offset)
            if low <= segment.start and self._fires_at_start(segment):
                return segment.start
        return None

    def count_in(self, low: datetime, high: datetime) -> int:
        """How many occurrences lie in ``[low, high]``."""
        total = 0
        if high < low:
            return total
        for segment in segments(self.zone, low, high + _TINY):
            if segment.end <= low or segment.start > high:
                continue
            if low <= segment.start and self._fires_at_start(segment):
                total += 1
            floor, at, end = self._walls(segment)
            total += self.spec.count(
                max(floor, at + _TINY, _naive(low + segment.offset)),
                min(end, _naive(high + segment.offset) + _TINY),
            )
        return total

    def closest(self, now: datetime) -> tuple[timedelta, datetime | None]:
        """The least real time between two consecutive firings after ``now``, and the
        DST change it happens at (``None``: on ordinary days)."""
        minutes, _ = self.spec.closest_wall_gap(_naive(now).date(), _CHECK_YEARS)
        best, where = timedelta(minutes=minutes), None
        for segment in segments(self.zone, now, now + _CHECK_YEARS * _YEAR)[1:]:
            change = segment.start
            before = self.last_in(change - timedelta(days=8), change - _TINY)
            first = self.next_after(change - _TINY)
            if first is None:
                continue
            after = self.next_after(first)
            for earlier, later in ((before, first), (first, after)):
                if earlier is not None and later is not None and later - earlier < best:
                    best, where = later - earlier, change
        return best, where


def _check_spacing(expression: str, rule: _CronRule, now: datetime, minimum: int) -> None:
    closest, change = rule.closest(now)
    if closest.total_seconds() >= minimum:
        return
    around = ""
    if change is not None:
        around = f" (around {_z(change)}, when {rule.zone.key} changes its UTC offset)"
    raise ScheduleValidationError(
        "cadence_value",
        f"cron {excerpt(expression)} fires {int(closest.total_seconds())} s apart at its"
        f" closest{around}; the minimum interval is {minimum} s of real time",
    )


def _instant(text: str, zone: zoneinfo.ZoneInfo) -> datetime:
    moment, aware = parse_instant(text)
    if aware:
        return moment
    if not 2 <= moment.year <= 9997:
        raise ScheduleValidationError(
            "cadence_value", f"{excerpt(text)} is outside the years 0002-9997"
        )
    return wall_to_instant(moment, zone)


def _stored_instant(text: str, zone: zoneinfo.ZoneInfo) -> datetime:
    """A stored ``once`` value; one stored before the strict reading, by Python's."""
    try:
        return _instant(text, zone)
    except ScheduleValidationError:
        legacy = datetime.fromisoformat(text.replace("z", "Z"))
        return legacy.astimezone(UTC) if legacy.tzinfo else wall_to_instant(legacy, zone)


def _naive(moment: datetime) -> datetime:
    """A UTC instant shifted by an offset, as the naive wall-clock time it reads."""
    return moment.replace(tzinfo=None)


def _aware(wall_utc: datetime) -> datetime:
    return wall_utc.replace(tzinfo=UTC)


def _z(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
