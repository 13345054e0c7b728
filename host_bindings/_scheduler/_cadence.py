"""Cadences: when a schedule fires, in its IANA time zone, across DST changes.

``cron`` is a 5-field expression (minute hour day-of-month month day-of-week) read as
wall-clock time in the schedule's zone; croniter enumerates the wall-clock times and each
becomes an instant by this rule:

* a wall-clock time that does not exist (it falls in a spring-forward gap) runs at the
  first instant after the gap: ``30 2 * * *`` in Europe/Paris on 2026-03-29 runs at
  03:00 CEST (01:00Z); several times in one gap run once, at that instant;
* a wall-clock time that happens twice (a fall-back overlap) runs once, at its first
  occurrence: ``30 1 * * *`` in America/New_York on 2026-11-01 runs at 01:30 EDT
  (05:30Z), not again at 01:30 EST.

``interval`` fires every N seconds of elapsed time, whatever the zone (``"90"``,
``"90s"``, ``"15m"``, ``"2h"``, ``"1d"``, ``"PT1H30M"``, ``"P1DT12H"``), first N seconds
after creation. ``once`` is an RFC 3339 instant in the future (a time without an offset
is read in the schedule's zone by the rule above). Cron and interval cadences must not
fire more often than ``min_interval_secs``.
"""

from __future__ import annotations

import re
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from croniter import CroniterError, croniter

from ._model import CadenceType, ScheduleValidationError

CRON_EXAMPLES = "e.g. '0 9 * * 1-5' for 09:00 on weekdays, '*/15 * * * *' for every 15 minutes"
MAX_SKIPPED_COUNTED = 100_000
"""Missed occurrences counted one by one after downtime; past this the count is a floor."""
_CRON_CHECK_SPAN = timedelta(days=8)
_CRON_CHECK_STEPS = 1500
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_ISO_DURATION = re.compile(
    r"P(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?"
)


def parse_zone(name: str) -> zoneinfo.ZoneInfo:
    """The IANA zone ``name``, or a validation error on ``timezone``."""
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleValidationError(
            "timezone", f"unknown time zone {name!r}; use an IANA name such as 'Europe/Paris'"
        ) from None


@dataclass(frozen=True, slots=True)
class Cadence:
    """A validated cadence: its normalised ``value`` and how to find occurrences."""

    kind: CadenceType
    value: str
    zone: zoneinfo.ZoneInfo

    def next_after(self, after: datetime) -> datetime | None:
        """The first occurrence strictly after ``after`` (UTC); ``None`` if none is left."""
        if self.kind is CadenceType.INTERVAL:
            return after + timedelta(seconds=int(self.value))
        if self.kind is CadenceType.ONCE:
            moment = _parse_instant(self.value, self.zone)
            return moment if moment > after else None
        return _next_cron(self.value, self.zone, after)

    def catch_up(self, due: datetime, now: datetime) -> CatchUp:
        """From the occurrence ``due`` (at or before ``now``): the latest occurrence at or
        before ``now`` (the one to run) and the earlier ones it replaces."""
        if self.kind is CadenceType.INTERVAL:
            step = timedelta(seconds=int(self.value))
            behind = (now - due) // step
            latest = due + behind * step
            return CatchUp(
                latest, behind, due if behind else None, latest - step if behind else None
            )
        if self.kind is CadenceType.ONCE:
            return CatchUp(due, 0, None, None)
        latest, skipped = due, 0
        first: datetime | None = None
        last: datetime | None = None
        for following in _cron_instants(self.value, self.zone, due):
            if following > now or skipped >= MAX_SKIPPED_COUNTED:
                break
            first = first or latest
            last = latest
            latest = following
            skipped += 1
        return CatchUp(latest, skipped, first, last)


@dataclass(frozen=True, slots=True)
class CatchUp:
    """What to run after downtime, and what it skips."""

    occurrence: datetime
    """The latest due occurrence: the one that runs."""
    skipped: int
    """How many earlier due occurrences do not run."""
    first_skipped: datetime | None
    last_skipped: datetime | None


def parse_cadence(
    kind: CadenceType, value: object, zone_name: str, *, now: datetime, min_interval_secs: int
) -> Cadence:
    """The cadence of ``kind`` from the tool argument ``value``, or a validation error on
    ``cadence_value`` saying what would be accepted."""
    zone = parse_zone(zone_name)
    if kind is CadenceType.INTERVAL:
        seconds = _interval_seconds(value)
        if seconds < min_interval_secs:
            raise ScheduleValidationError(
                "cadence_value",
                f"every {seconds} s is too often; the minimum interval is {min_interval_secs} s",
            )
        return Cadence(kind, str(seconds), zone)
    if not isinstance(value, str) or not value.strip():
        raise ScheduleValidationError("cadence_value", f"must be a string for a {kind} cadence")
    if kind is CadenceType.ONCE:
        moment = _parse_instant(value.strip(), zone)
        if moment <= now:
            raise ScheduleValidationError(
                "cadence_value",
                f"{value.strip()} is not in the future (now is {now.isoformat()});"
                " give a later RFC 3339 time",
            )
        return Cadence(kind, value.strip(), zone)
    expression = " ".join(value.split())
    _check_cron(expression, zone, now, min_interval_secs)
    return Cadence(kind, expression, zone)


def _interval_seconds(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str):
        seconds = _duration(value.strip())
    else:
        seconds = -1
    if seconds <= 0:
        raise ScheduleValidationError(
            "cadence_value",
            f"{value!r} is not an interval; give seconds ('3600') or a duration"
            " ('90s', '15m', '2h', '1d', 'PT1H30M')",
        )
    return seconds


def _duration(text: str) -> int:
    if text.isdigit():
        return int(text)
    simple = re.fullmatch(r"(\d+)\s*([smhdw])", text.lower())
    if simple:
        return int(simple[1]) * _UNITS[simple[2]]
    iso = _ISO_DURATION.fullmatch(text.upper())
    if iso and text.upper() not in ("P", "PT") and not text.upper().endswith("T"):
        return sum(int(iso[unit] or 0) * _UNITS[unit.lower()] for unit in "wdhms")
    return -1


def _parse_instant(text: str, zone: zoneinfo.ZoneInfo) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise ScheduleValidationError(
            "cadence_value",
            f"{text!r} is not an RFC 3339 time; write e.g. '2026-12-24T18:00:00+01:00'",
        ) from None
    if moment.tzinfo is None:
        return wall_to_instant(moment, zone)
    return moment.astimezone(UTC)


def _check_cron(expression: str, zone: zoneinfo.ZoneInfo, now: datetime, minimum: int) -> None:
    fields = expression.split(" ")
    if len(fields) != 5:
        raise ScheduleValidationError(
            "cadence_value",
            f"a cron expression has 5 fields (minute hour day month weekday), not"
            f" {len(fields)}; {CRON_EXAMPLES}",
        )
    try:
        walk = croniter(expression, now.astimezone(zone).replace(tzinfo=None))
        previous: datetime = walk.get_next(datetime)
        first = previous
        closest: timedelta | None = None
        for _ in range(_CRON_CHECK_STEPS):
            following: datetime = walk.get_next(datetime)
            gap = following - previous
            closest = gap if closest is None or gap < closest else closest
            previous = following
            if following - first > _CRON_CHECK_SPAN:
                break
    except (CroniterError, ValueError, KeyError) as exc:
        raise ScheduleValidationError(
            "cadence_value", f"invalid cron expression {expression!r} ({exc}); {CRON_EXAMPLES}"
        ) from None
    if closest is not None and closest.total_seconds() < minimum:
        raise ScheduleValidationError(
            "cadence_value",
            f"{expression!r} fires {int(closest.total_seconds())} s apart at its closest;"
            f" the minimum interval is {minimum} s",
        )


def _next_cron(expression: str, zone: zoneinfo.ZoneInfo, after: datetime) -> datetime | None:
    return next(_cron_instants(expression, zone, after), None)


def _cron_instants(expression: str, zone: zoneinfo.ZoneInfo, after: datetime) -> Iterator[datetime]:
    """The occurrences strictly after ``after``, in order, each once."""
    # Wall-clock times only move back in a fall-back's repeated hour, whose times run at
    # their first occurrence (fold=0): from inside the repeat, the walk meets times whose
    # instants are already past, and skips them (at most the repeat's worth).
    walk = croniter(expression, after.astimezone(zone).replace(tzinfo=None))
    previous = after
    misses = 0
    while misses < 10_000:
        try:
            wall: datetime = walk.get_next(datetime)
        except CroniterError:
            return
        moment = wall_to_instant(wall, zone)
        if moment > previous:
            misses = 0
            previous = moment
            yield moment
        else:
            misses += 1


def wall_to_instant(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The instant of naive wall-clock time ``wall`` in ``zone`` (UTC), by the module's rule."""
    first = wall.replace(tzinfo=zone, fold=0)
    moment = first.astimezone(UTC)
    if moment.astimezone(zone).replace(tzinfo=None) == wall:
        return moment  # exists; fold=0 is its first occurrence when it happens twice
    # In a gap: fold=0 reads it with the offset before the change (an instant after the
    # gap), fold=1 with the offset after (an instant before it). The change lies between.
    low = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    high = int(moment.timestamp())
    low, high = min(low, high), max(low, high)
    after_offset = moment.astimezone(zone).utcoffset()
    while high - low > 1:  # offsets change on whole seconds
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == after_offset:
            high = middle
        else:
            low = middle
    return datetime.fromtimestamp(high, UTC)
