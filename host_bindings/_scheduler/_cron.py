"""Standard cron expressions: a strict parser and the wall-clock times they name.

The grammar is the 5-field one every cron shares (POSIX, Vixie cron, cronie)::

    minute  hour  day-of-month  month  day-of-week
    0-59    0-23  1-31          1-12   0-7 (0 and 7 are Sunday)

A field is a comma-separated list of items; an item is ``*``, a value, a range ``a-b``,
or either of the last two with a step: ``*/n``, ``a-b/n``. Months and weekdays may also
be written by their English three-letter names (``jan``, ``mon-fri``), in any case. Five
macros stand for whole expressions: ``@hourly`` (``0 * * * *``), ``@daily`` and
``@midnight`` (``0 0 * * *``), ``@weekly`` (``0 0 * * 0``), ``@monthly``
(``0 0 1 * *``), ``@yearly`` and ``@annually`` (``0 0 1 1 *``). When both day fields are
restricted (neither starts with ``*``) a day matches either one, else both (cron's rule).

Everything else is refused with a message saying what is supported: a seconds or year
field, ``?``, ``L``, ``W``, ``#``, ``H`` and other hashed or random forms, ``@reboot``,
``@every``, a bare ``a/n``, a step larger than the field's span.

A :class:`CronSpec` answers questions about naive wall-clock times (minute resolution):
the first, last and number of matching minutes in a range. It knows nothing of zones;
:mod:`._cadence` turns wall-clock times into instants. It also says which DST rule the
expression follows, the way Vixie cron and cronie decide it: an expression whose minute or
hour field starts with ``*`` (and ``@hourly``) runs hourly or more often and follows real
elapsed time; any other runs at fixed local times.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from ._model import ScheduleValidationError

SUPPORTED = (
    "supported: 5 fields (minute hour day-of-month month day-of-week) of numbers, '*',"
    " ranges 'a-b', lists 'a,b', steps '*/n' and 'a-b/n', month and weekday names;"
    " or @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually"
)
MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS = (  # name, low, high, names (value of the first name)
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day-of-month", 1, 31, None),
    ("month", 1, 12, {name: i + 1 for i, name in enumerate(_MONTHS)}),
    ("day-of-week", 0, 7, {name: i for i, name in enumerate(_DAYS)}),
)
_EXTENSIONS = {  # what a refused mark usually means, for the message
    "?": "'?' (no specific value)",
    "#": "'#' (nth weekday)",
    "l": "'L' (last)",
    "w": "'W' (nearest weekday)",
    "lw": "'LW' (last weekday)",
    "h": "'H' (hashed value)",
    "r": "'R' (random value)",
    "~": "'~' (random value)",
}
_ITEM = re.compile(r"(\*|[0-9a-z]+(?:-[0-9a-z]+)?)(?:/([0-9]+))?")
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_DAY = timedelta(days=1)
_MINUTE = timedelta(minutes=1)


def _refuse(expression: str, why: str) -> ScheduleValidationError:
    shown = expression if len(expression) <= 60 else expression[:59] + "…"
    return ScheduleValidationError("cadence_value", f"cron {shown!r}: {why}; {SUPPORTED}")


@dataclass(frozen=True, slots=True)
class CronSpec:
    """A parsed cron expression: the sets of values each field allows."""

    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0 is Sunday (a 7 in the expression is stored as 0)."""
    either_day: bool
    """Both day fields are restricted: a day matches when either does."""
    real_time: bool
    """Runs hourly or more often (minute or hour field starts with ``*``): follows real
    elapsed time across DST changes rather than running once per local time."""
    times: tuple[int, ...]
    """Matching minutes of a day (``hour * 60 + minute``), ascending."""

    @classmethod
    def parse(cls, text: str) -> CronSpec:
        """The expression ``text`` (fields separated by blanks, or a macro), or a
        validation error on ``cadence_value`` naming what is wrong and what is supported."""
        expression = " ".join(text.split())
        if expression.startswith("@"):
            macro = MACROS.get(expression.lower())
            if macro is None:
                raise _refuse(expression, "unknown macro")
            return cls.parse(macro)
        fields = expression.split(" ")
        if len(fields) != 5:
            extra = " (a seconds or year field is not standard)" if len(fields) in (6, 7) else ""
            raise _refuse(expression, f"has {len(fields)} fields, not 5{extra}")
        sets = [
            _field(expression, raw.lower(), *spec)
            for raw, spec in zip(fields, _FIELDS, strict=True)
        ]
        minutes, hours, days, months, weekdays = sets
        weekdays = {0 if day == 7 else day for day in weekdays}
        days_star, weekdays_star = fields[2].startswith("*"), fields[4].startswith("*")
        either_day = not days_star and not weekdays_star
        if not either_day and all(day > _MONTH_DAYS[month - 1] for month in months for day in days):
            raise _refuse(expression, "names no day that exists in its months: it never fires")
        return cls(
            minutes=tuple(sorted(minutes)),
            hours=tuple(sorted(hours)),
            days=frozenset(days),
            months=frozenset(months),
            weekdays=frozenset(weekdays),
            either_day=either_day,
            real_time=fields[0].startswith("*") or fields[1].startswith("*"),
            times=tuple(sorted(h * 60 + m for h in hours for m in minutes)),
        )

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        by_date = day.day in self.days
        by_weekday = day.isoweekday() % 7 in self.weekdays
        return (by_date or by_weekday) if self.either_day else (by_date and by_weekday)

    def first(self, low: datetime, high: datetime) -> datetime | None:
        """The first matching minute ``W`` with ``low <= W < high`` (naive wall times)."""
        day, start = low.date(), _minute_ceil(low)
        while True:
            if start >= 1440:
                day, start = day + _DAY, 0
            if datetime.combine(day, time()) >= high:
                return None
            if day.month not in self.months:  # jump to the next month
                day, start = _next_month(day), 0
                continue
            if self.matches_day(day):
                index = bisect.bisect_left(self.times, start)
                if index < len(self.times):
                    found = datetime.combine(day, time()) + self.times[index] * _MINUTE
                    return found if found < high else None
            day, start = day + _DAY, 0

    def last(self, low: datetime, high: datetime) -> datetime | None:
        """The last matching minute ``W`` with ``low <= W < high``."""
        day, end = high.date(), _minute_ceil(high)  # minutes of the day before ``end``
        floor = low.date()
        while day >= floor:
            if self.matches_day(day):
                index = bisect.bisect_left(self.times, end) - 1
                if index >= 0:
                    found = datetime.combine(day, time()) + self.times[index] * _MINUTE
                    return found if found >= low else None
            day, end = day - _DAY, 1440
        return None

    def count(self, low: datetime, high: datetime) -> int:
        """How many matching minutes ``W`` have ``low <= W < high``: whole days by the
        size of :attr:`times`, the two ends by bisection."""
        if high <= low:
            return 0
        first_day, last_day = low.date(), high.date()
        total, per_day = 0, len(self.times)
        day = first_day
        while day <= last_day:
            if self.matches_day(day):
                start = _minute_ceil(low) if day == first_day else 0
                end = _minute_ceil(high) if day == last_day else 1440
                if start == 0 and end == 1440:
                    total += per_day
                else:
                    total += bisect.bisect_left(self.times, end) - bisect.bisect_left(
                        self.times, start
                    )
                day += _DAY
            elif day.month not in self.months:
                day = _next_month(day)
            else:
                day += _DAY
        return total

    def closest_wall_gap(self, start: date, years: int) -> tuple[int, date | None]:
        """The fewest minutes between two consecutive matching wall-clock times over
        ``years`` years of days from ``start``, and a day it happens (``None``: within
        any matching day)."""
        within = min((b - a for a, b in zip(self.times, self.times[1:], strict=False)), default=0)
        span = 1440 - self.times[-1] + self.times[0]  # last of a day to first of the next
        closest, where = (within, None) if within else (1 << 62, None)
        previous: date | None = None
        day, end = start, start + timedelta(days=366 * years)
        while day < end:
            if day.month not in self.months:
                day = _next_month(day)
                continue
            if self.matches_day(day):
                if previous is not None:
                    gap = span + ((day - previous).days - 1) * 1440
                    if gap < closest:
                        closest, where = gap, previous
                    if day - previous == _DAY:
                        break  # the closest two days can be
                previous = day
            day += _DAY
        return closest, where


def _field(
    expression: str, raw: str, name: str, low: int, high: int, names: dict[str, int] | None
) -> set[int]:
    values: set[int] = set()
    for item in raw.split(","):
        for mark in re.findall(r"[^0-9a-z*,/-]|[a-z]+", item):
            if names is not None and mark in names:
                continue
            meaning = _EXTENSIONS.get(mark) or _EXTENSIONS.get(mark[:1])
            if meaning is not None:
                raise _refuse(expression, f"the {name} field uses {meaning}, an extension")
        match = _ITEM.fullmatch(item)
        if match is None:
            raise _refuse(expression, f"the {name} field {item!r} is not a value, range or step")
        span, step_text = match.groups()
        if span == "*":
            first, last = low, high
        else:
            ends = span.split("-")
            first = _value(expression, ends[0], name, low, high, names)
            last = _value(expression, ends[-1], name, low, high, names)
            if len(ends) == 1 and step_text is not None:
                raise _refuse(expression, f"the {name} field {item!r} steps from a single value")
            if first > last:
                raise _refuse(expression, f"the {name} range {item!r} runs backwards")
        step = 1
        if step_text is not None:
            step = int(step_text)
            if not 1 <= step <= high - low:
                raise _refuse(
                    expression,
                    f"the {name} step {step} is outside 1-{high - low}"
                    " (for longer periods use an interval cadence)",
                )
        values.update(range(first, last + 1, step))
    return values


def _value(
    expression: str, text: str, name: str, low: int, high: int, names: dict[str, int] | None
) -> int:
    if text.isdigit() and len(text) <= 2:
        value = int(text)
    elif names is not None and text in names:
        value = names[text]
    else:
        raise _refuse(expression, f"the {name} field has {text!r}, not a value in {low}-{high}")
    if not low <= value <= high:
        raise _refuse(expression, f"the {name} value {value} is outside {low}-{high}")
    return value


def _minute_ceil(moment: datetime) -> int:
    """The minute of the day at or after ``moment`` (1440: none left that day)."""
    minute = moment.hour * 60 + moment.minute
    return minute + 1 if (moment.second or moment.microsecond) else minute


def _next_month(day: date) -> date:
    return date(day.year + 1, 1, 1) if day.month == 12 else date(day.year, day.month + 1, 1)
