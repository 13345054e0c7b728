"""What ``schedule_create`` and ``schedule_edit`` accept as cadences and zones, through
``Runtime.execute``: canonical IANA zones, standard cron, RFC 3339, bounded intervals, the
minimum interval in real time -- every refusal a ``validation_error`` naming its field."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from .test_schedule_tools import CONFIG, DAILY, Box, runtime_in

pytestmark = pytest.mark.anyio


@pytest.fixture
async def box(tmp_path: Path) -> AsyncIterator[Box]:
    text = CONFIG + "[scheduler]\nmin_interval_secs = 3600\n"
    async with await runtime_in(tmp_path, text) as runtime:
        yield Box(runtime, tmp_path)


async def refused(box: Box, tool: str, field: str, **args: Any) -> str:
    result = await box.call(tool, **args)
    assert result.is_error, result.output_text
    assert result.error is not None
    assert (result.error.kind.value, result.error.field) == ("validation_error", field), (
        result.error.message
    )
    assert len(result.error.message) < 600
    return result.error.message


class TestZones:
    @pytest.mark.parametrize(
        ("given", "stored"),
        [
            ("US/Eastern", "America/New_York"),
            ("UTC", "Etc/UTC"),
            ("Australia/LHI", "Australia/Lord_Howe"),
        ],
    )
    async def test_a_link_is_stored_as_its_canonical_target(
        self, box: Box, given: str, stored: str
    ) -> None:
        made = await box.ok("schedule_create", **DAILY, timezone=given)
        assert made["timezone"] == stored
        [shown] = (await box.ok("schedule_search"))["schedules"]
        assert shown["timezone"] == stored

    async def test_the_default_zone_is_etc_utc(self, box: Box) -> None:
        assert (await box.ok("schedule_create", **DAILY))["timezone"] == "Etc/UTC"

    @pytest.mark.parametrize(
        "zone",
        ["localtime", "posixrules", "Factory", "posix/Europe/Paris", "right/America/New_York"],
    )
    async def test_host_aliases_and_zone_trees_are_refused(self, box: Box, zone: str) -> None:
        message = await refused(box, "schedule_create", "timezone", **DAILY, timezone=zone)
        assert "not an IANA time zone name" in message
        assert (await box.ok("schedule_search"))["total"] == 0

    async def test_edit_stores_the_canonical_name_too(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        edited = await box.ok(
            "schedule_edit", schedule_id=made["schedule_id"], timezone="Asia/Calcutta"
        )
        assert edited["timezone"] == "Asia/Kolkata"
        await refused(
            box, "schedule_edit", "timezone", schedule_id=made["schedule_id"], timezone="localtime"
        )


class TestCadences:
    @pytest.mark.parametrize(
        ("cadence_type", "value", "says"),
        [
            ("cron", "0 0 L * *", "'L' (last)"),
            ("cron", "H 9 * * *", "'H' (hashed value)"),
            ("cron", "0 9 * * 1#2", "'#' (nth weekday)"),
            ("cron", "@reboot", "unknown macro"),
            ("cron", "0 0 9 * * *", "6 fields"),
            ("once", "2030-01-31 09:00:00Z", "space"),
            ("once", "2030-01-31", "a date without a time"),
            ("once", "2030-W05-4T09:00:00Z", "ISO week"),
            ("once", "2090-01-31T09:00:00Z", "more than 3650 days ahead"),
            ("once", "9999-12-31T23:59:59-23:59", "outside the years"),
            ("interval", "999999999d", "at most 315360000 s"),
            ("interval", "99999999999999999999", "at most 315360000 s"),
            ("interval", "30m", "minimum interval is 3600"),
        ],
    )
    async def test_refusals_are_validation_errors_on_the_field(
        self, box: Box, cadence_type: str, value: str, says: str
    ) -> None:
        message = await refused(
            box,
            "schedule_create",
            "cadence_value",
            goal="x",
            cadence_type=cadence_type,
            cadence_value=value,
        )
        assert says in message
        if cadence_type == "cron":
            assert "@hourly, @daily, @midnight, @weekly, @monthly, @yearly" in message

    async def test_the_minimum_interval_is_real_time_across_dst(self, box: Box) -> None:
        # 01:30 EST, then 02:30 -- inside the spring-forward gap -- at 03:00 EDT.
        message = await refused(
            box,
            "schedule_create",
            "cadence_value",
            goal="x",
            cadence_type="cron",
            cadence_value="30 1,2 * * *",
            timezone="America/New_York",
        )
        assert "fires 1800 s apart" in message
        assert "America/New_York changes its UTC offset" in message
        await box.ok(
            "schedule_create",
            goal="x",
            cadence_type="cron",
            cadence_value="@hourly",
            timezone="Australia/Lord_Howe",
        )

    async def test_an_edit_is_checked_the_same_way(self, box: Box) -> None:
        made = await box.ok("schedule_create", **DAILY)
        message = await refused(
            box,
            "schedule_edit",
            "cadence_value",
            schedule_id=made["schedule_id"],
            cadence_value="0 0 L * *",
        )
        assert "supported: 5 fields" in message
        edited = await box.ok(
            "schedule_edit", schedule_id=made["schedule_id"], cadence_value="@weekly"
        )
        assert edited["cadence_value"] == "@weekly"
