"""The ``clock`` binding: wall-clock time in any IANA time zone of the host's database.

Request ``{"timezone": "Europe/Paris"}`` (omitted or null: the host's own zone). Result::

    {"ok": true, "timezone": "Europe/Paris", "iso8601": "2026-01-05T14:03:00+01:00",
     "human_readable": "Monday, 5 January 2026, 14:03:00 CET (UTC+01:00)",
     "utc_offset": "+01:00", "abbreviation": "CET", "unix": 1767618180}

An unknown zone name is ``validation_error``. Names are looked up through :mod:`zoneinfo`,
which refuses anything that is not a plain relative key (no ``..``, no absolute paths).
"""

from __future__ import annotations

import contextlib
import os
import time
import zoneinfo
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import wasmtime

from ._abi import (
    AbiError,
    GuestError,
    failed,
    module_name,
    ok,
)
from ._results import define_json_call


def host_timezone() -> str:
    """The host's IANA zone name: ``$TZ``, ``/etc/timezone``, the ``/etc/localtime`` link, UTC."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    try:
        target = str(Path("/etc/localtime").resolve())
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for name in candidates:
        if name and _zone(name) is not None:
            return name
    return "UTC"


def _zone(name: str) -> zoneinfo.ZoneInfo | None:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return None


def now_in(name: str | None, at: float | None = None) -> dict[str, Any]:
    """The clock result for zone ``name`` (``None``: the host's zone)."""
    name = name or host_timezone()
    zone = _zone(name)
    if zone is None:
        return failed("validation_error", f"unknown time zone {name!r} (use an IANA name)")
    moment = datetime.fromtimestamp(time.time() if at is None else at, UTC).astimezone(zone)
    offset = moment.strftime("%z")
    offset = f"{offset[:3]}:{offset[3:]}"
    abbreviation = moment.tzname() or ""
    return ok(
        timezone=name,
        iso8601=moment.isoformat(timespec="seconds"),
        human_readable=(
            f"{moment:%A}, {moment.day} {moment:%B %Y, %H:%M:%S} {abbreviation} (UTC{offset})"
        ),
        utc_offset=offset,
        abbreviation=abbreviation,
        unix=int(moment.timestamp()),
    )


class ClockBinding:
    """Capability ``clock``: ``toolcage_clock_v1.now`` / ``.result``."""

    name = "clock"

    def define(self, linker: wasmtime.Linker) -> None:
        define_json_call(linker, module_name(self.name), "now", lambda _, req: _now(req))


def _now(request: dict[str, Any]) -> dict[str, Any]:
    zone = request.get("timezone")
    if zone is not None and not isinstance(zone, str):
        raise GuestError(AbiError.INVALID)
    return now_in(zone)
