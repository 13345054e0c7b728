"""Time zones of schedules: canonical IANA names, and the offsets a zone goes through.

**Names.** A schedule's zone is a canonical name of the IANA tz database, release
:data:`~._zone_names.RELEASE`: a ``Zone`` of that release (as built with its ``backzone``
file, the way Debian and Ubuntu ship it, so ``Europe/Oslo`` keeps its name), or a ``Link``,
which is stored as its target (``US/Eastern`` -> ``America/New_York``, ``UTC`` ->
``Etc/UTC``, ``Asia/Calcutta`` -> ``Asia/Kolkata``). The System V names ``EST5EDT``,
``CET``, ``EST`` ... are links to the cities IANA's own data names since 2024b
(``America/New_York``, ``Europe/Brussels``, ``America/Panama``). Names are matched
without regard to case. Anything else is refused, in particular what a host's zone
directory holds beside the IANA names: ``localtime`` and ``posixrules`` (host aliases),
``Factory``, and the ``posix/`` and ``right/`` trees (``right/`` zones count leap seconds,
and Python reads them an hour off all winter). The list is pinned in
:mod:`._zone_names` (regenerate it with ``python -m
toolcage.host_bindings._scheduler._zones /usr/share/zoneinfo/tzdata.zi``) so that every
host accepts the same names; the zone's rules are read from the host's tz database.

**Offsets.** :func:`segments` cuts a span of instants into stretches of one UTC offset.
Changes are found by probing the offset once a day and bisecting to the second (a
zone's offset changes at most once in a day), and cached per zone and year.
"""

from __future__ import annotations

import functools
import sys
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ._model import ScheduleError, ScheduleValidationError
from ._zone_names import CANONICAL, LINKS

_BY_FOLDED = {name.lower(): name for name in CANONICAL} | {
    link.lower(): target for link, target in LINKS.items()
}
_SYSTEM_V = {
    "CET": "Europe/Brussels",
    "CST6CDT": "America/Chicago",
    "EET": "Europe/Athens",
    "EST": "America/Panama",
    "EST5EDT": "America/New_York",
    "HST": "Pacific/Honolulu",
    "MET": "Europe/Brussels",
    "MST": "America/Phoenix",
    "MST7MDT": "America/Denver",
    "PST8PDT": "America/Los_Angeles",
    "WET": "Europe/Lisbon",
}
"""The names IANA's main data made links in 2024b (``backzone`` keeps them as zones)."""
_PROBE = timedelta(days=1)


def canonical_zone(name: str) -> str:
    """The canonical IANA name ``name`` stands for, or a validation error on
    ``timezone`` saying what would do."""
    found = _BY_FOLDED.get(name.strip().lower())
    if found is None:
        shown = name if len(name) <= 40 else name[:39] + "…"
        hint = ""
        if shown.lower().startswith(("posix/", "right/")):
            hint = f" (drop the {shown.split('/')[0]}/ prefix)"
        raise ScheduleValidationError(
            "timezone",
            f"{shown!r} is not an IANA time zone name{hint}; use a canonical name such as"
            " 'Europe/Paris', 'America/New_York' or 'Etc/UTC'",
        )
    try:
        zoneinfo.ZoneInfo(found)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleValidationError(
            "timezone", f"{found!r} is missing from this host's time zone database"
        ) from None
    return found


def parse_zone(name: str) -> zoneinfo.ZoneInfo:
    """The zone of the canonical name ``name`` stands for (see :func:`canonical_zone`)."""
    return zoneinfo.ZoneInfo(canonical_zone(name))


def stored_zone(name: str) -> zoneinfo.ZoneInfo:
    """The zone of a stored schedule: its canonical name, or a name stored before names
    were checked, read as its canonical zone (a link as its target, ``right/X`` and
    ``posix/X`` as ``X``); a :class:`~._model.ScheduleError` if the host cannot load it."""
    bare = name.removeprefix("posix/").removeprefix("right/")
    target = _BY_FOLDED.get(bare.lower(), bare)
    try:
        return zoneinfo.ZoneInfo(target)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ScheduleError(f"time zone {name!r} cannot be loaded on this host: {exc}") from None


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of instants ``[start, end)`` at one UTC offset."""

    start: datetime
    end: datetime
    offset: timedelta
    before: timedelta
    """The offset just before ``start`` (``offset`` if ``start`` is not a change)."""


def segments(zone: zoneinfo.ZoneInfo, low: datetime, high: datetime) -> list[Segment]:
    """Stretches of one offset covering ``[low - 1 day, high)``, in order. The first
    starts one day early so that a change just before ``low`` is seen: what callers
    compute for instants at or after ``low`` is exact."""
    start = low - _PROBE
    changes = [
        change
        for year in range(start.year, high.year + 1)
        for change in _changes(zone, year)
        if start < change[0] < high
    ]
    first = _offset(zone, start)
    found: list[Segment] = []
    offset = first
    for moment, after in changes:
        found.append(Segment(start, moment, offset, offset if not found else found[-1].offset))
        start, offset = moment, after
    found.append(Segment(start, high, offset, found[-1].offset if found else first))
    return found


def _offset(zone: zoneinfo.ZoneInfo, moment: datetime) -> timedelta:
    return moment.astimezone(zone).utcoffset() or timedelta(0)


@functools.lru_cache(maxsize=512)
def _changes(zone: zoneinfo.ZoneInfo, year: int) -> tuple[tuple[datetime, timedelta], ...]:
    """The instants in UTC ``year`` at which ``zone``'s offset changes, each with the
    offset from then on."""
    if year < 1 or year > 9998:
        return ()
    moment, end = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    offset, found = _offset(zone, moment), []
    while moment < end:
        probe = min(moment + _PROBE, end)
        after = _offset(zone, probe)
        if after != offset:
            low, high = moment, probe  # offset(low) is the old one, offset(high) the new
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                middle = middle.replace(microsecond=0)
                if _offset(zone, middle) == offset:
                    low = middle
                else:
                    high = middle
            found.append((high, after))
            offset = after
        moment = probe
    return tuple(found)


def zone_names_source(tzdata_zi: str, release: str) -> str:
    """The text of :mod:`._zone_names` from the text of a ``tzdata.zi``."""
    zones, links = [], dict(_SYSTEM_V)
    for line in tzdata_zi.splitlines():
        parts = line.split()
        if parts[:1] == ["Z"] and parts[1] != "Factory" and parts[1] not in _SYSTEM_V:
            zones.append(parts[1])
        elif parts[:1] == ["L"]:
            links[parts[2]] = parts[1]
    names = "\n".join(f"        {name!r}," for name in sorted(zones))
    pairs = "\n".join(f"    {link!r}: {target!r}," for link, target in sorted(links.items()))
    return (
        f'"""The IANA tz database\'s names, release {release} (generated by\n'
        f'``python -m toolcage.host_bindings._scheduler._zones tzdata.zi``)."""\n\n'
        f'RELEASE = "{release}"\n'
        f"CANONICAL = frozenset(\n    {{\n{names}\n    }}\n)\n"
        f'"""Every ``Zone`` (but ``Factory`` and the System V names)."""\n'
        f"LINKS = {{\n{pairs}\n}}\n"
        f'"""Every ``Link``, and the System V names, to its target."""\n'
    )


if __name__ == "__main__":
    text = open(sys.argv[1], encoding="utf-8").read()  # noqa: SIM115 -- a one-off script
    release = next(line.split()[-1] for line in text.splitlines() if line.startswith("# version"))
    sys.stdout.write(zone_names_source(text, release))
