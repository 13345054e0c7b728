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
    I32,
    AbiError,
    GuestError,
    PendingResults,
    call_state,
    failed,
    guarded,
    module_name,
    ok,
    parse_request,
)
from ._memory import read_bytes
from ._results import define_result


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

    def __init__(self) -> None:
        self._pending = PendingResults()

    def define(self, linker: wasmtime.Linker) -> None:
        module = module_name(self.name)

        @guarded
        def now(caller: wasmtime.Caller, ptr: int, length: int) -> int:
            state = call_state()
            req = parse_request(read_bytes(caller, ptr, length)) if length else {}
            zone = req.get("timezone")
            if zone is not None and not isinstance(zone, str):
                raise GuestError(AbiError.INVALID)
            return self._pending.put(state, now_in(zone))

        linker.define_func(module, "now", wasmtime.FuncType([I32, I32], [I32]), now, True)
        define_result(linker, module, self._pending)
