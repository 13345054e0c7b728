"""The written forms of ``once`` instants and ``interval`` periods, read strictly.

An instant is an RFC 3339 date-time: ``2026-12-24T18:00:00+01:00``, ``...Z``, with an
optional fraction of a second; ``T`` and ``Z`` may be lower case. It may leave out its
offset (``2026-12-24T18:00:00``): it is then the wall-clock time in the schedule's zone,
read by the fixed-time DST rule (see :mod:`._cadence`). Nothing else is read as an
instant: no space separator, bare date, ISO week or ordinal date, basic format without
dashes, or leap second.

An interval is a whole number of seconds (``3600``, as a number or a string), a number
with a unit (``90s``, ``15m``, ``2h``, ``1d``, ``1w``) or an ISO 8601 duration of weeks,
days, hours, minutes and seconds (``PT1H30M``, ``P1DT12H``; no years or months, whose
length varies).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from ._model import ScheduleValidationError

MAX_INTERVAL_SECS = 3650 * 86400
"""The longest interval: 3650 days (about ten years)."""
MAX_AHEAD = timedelta(days=3650)
"""How far ahead a ``once`` instant may be: 3650 days."""
INSTANT_EXAMPLE = "'2026-12-24T18:00:00+01:00' (or '...T18:00:00', read in the timezone)"
INTERVAL_FORMS = "seconds ('3600') or a duration ('90s', '15m', '2h', '1d', '1w', 'PT1H30M')"

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?"
)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIMPLE = re.compile(r"(\d{1,15})\s*([smhdw])")
_ISO_DURATION = re.compile(
    r"P(?:(?P<w>\d{1,9})W)?(?:(?P<d>\d{1,9})D)?"
    r"(?:T(?=\d)(?:(?P<h>\d{1,9})H)?(?:(?P<m>\d{1,9})M)?(?:(?P<s>\d{1,9})S)?)?"
)


def excerpt(value: object, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def interval_seconds(value: object) -> int:
    """The seconds of an interval, or a validation error on ``cadence_value``."""
    seconds = -1
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    elif isinstance(value, str) and len(value) <= 64:
        seconds = _duration(value.strip())
    if seconds <= 0:
        raise ScheduleValidationError(
            "cadence_value", f"{excerpt(value)} is not an interval; give {INTERVAL_FORMS}"
        )
    if seconds > MAX_INTERVAL_SECS:
        raise ScheduleValidationError(
            "cadence_value",
            f"an interval of {excerpt(value)} is {seconds} s; at most {MAX_INTERVAL_SECS} s"
            " (3650 days)",
        )
    return seconds


def _duration(text: str) -> int:
    if text.isdigit() and text.isascii():
        return int(text) if len(text) <= 15 else MAX_INTERVAL_SECS + 1
    simple = _SIMPLE.fullmatch(text.lower())
    if simple:
        return int(simple[1]) * _UNITS[simple[2]]
    iso = _ISO_DURATION.fullmatch(text.upper())
    if iso and any(iso.groups()):
        return sum(int(iso[unit] or 0) * _UNITS[unit.lower()] for unit in "wdhms")
    return -1


def parse_instant(text: str) -> tuple[datetime, bool]:
    """An RFC 3339 date-time: aware in UTC with ``True`` when it has an offset, else the
    naive wall-clock time with ``False``; or a validation error on ``cadence_value``."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise ScheduleValidationError("cadence_value", _why_not(text))
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction, zulu, sign, offset_hours, offset_minutes = match.groups()[6:]
    if second == 60:
        raise ScheduleValidationError(
            "cadence_value", f"{excerpt(text)} names a leap second; use :59 or the next minute"
        )
    try:
        moment = datetime(
            year, month, day, hour, minute, second, int((fraction or "0")[:6].ljust(6, "0"))
        )
    except ValueError as exc:
        raise ScheduleValidationError(
            "cadence_value", f"{excerpt(text)} is not a valid date and time ({exc})"
        ) from None
    if zulu:
        return moment.replace(tzinfo=UTC), True
    if sign is None:
        return moment, False
    if int(offset_hours) > 23 or int(offset_minutes) > 59:
        raise ScheduleValidationError(
            "cadence_value", f"{excerpt(text)} has an offset beyond ±23:59"
        )
    offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
    try:
        aware = moment.replace(tzinfo=timezone(-offset if sign == "-" else offset))
        return aware.astimezone(UTC), True
    except OverflowError:
        raise ScheduleValidationError(
            "cadence_value", f"{excerpt(text)} is outside the years 0001-9999 in UTC"
        ) from None


def _why_not(text: str) -> str:
    shown = excerpt(text)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        reason = "is a date without a time"
    elif re.fullmatch(r"\d{4}-\d{2}-\d{2}[ _]\d{2}:\d{2}.*", text):
        reason = "separates date and time with a space; RFC 3339 uses 'T'"
    elif re.search(r"\d{4}-?W\d{2}", text, re.IGNORECASE) or re.fullmatch(
        r"\d{4}-\d{3}(?:[Tt].*)?", text
    ):
        reason = "is an ISO week or ordinal date, not an RFC 3339 date"
    elif re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}(?:[Zz]|[+-].*)?", text):
        reason = "has no seconds"
    else:
        reason = "is not an RFC 3339 date-time"
    return f"{shown} {reason}; write e.g. {INSTANT_EXAMPLE}"
