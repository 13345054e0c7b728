"""Cadences: DST gaps and overlaps, downtime catch-up, and validation messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from toolcage.host_bindings._scheduler import (
    CadenceType,
    ScheduleValidationError,
    parse_cadence,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def occurrences(expression: str, zone: str, start: datetime, count: int) -> list[str]:
    cadence = parse_cadence(CadenceType.CRON, expression, zone, now=start, min_interval_secs=60)
    found, at = [], start
    for _ in range(count):
        following = cadence.next_after(at)
        assert following is not None
        found.append(following.strftime("%Y-%m-%dT%H:%MZ"))
        at = following
    return found


class TestDaylightSaving:
    def test_paris_spring_forward_runs_at_the_end_of_the_gap(self) -> None:
        # 02:30 does not exist on 2026-03-29 in Paris (02:00 CET -> 03:00 CEST).
        assert occurrences("30 2 * * *", "Europe/Paris", datetime(2026, 3, 27, tzinfo=UTC), 4) == [
            "2026-03-27T01:30Z",  # 02:30 CET
            "2026-03-28T01:30Z",
            "2026-03-29T01:00Z",  # 03:00 CEST, the first instant after the gap
            "2026-03-30T00:30Z",  # 02:30 CEST
        ]

    def test_paris_fall_back_runs_once_at_the_first_occurrence(self) -> None:
        # 02:30 happens twice on 2026-10-25 in Paris (03:00 CEST -> 02:00 CET).
        assert occurrences("30 2 * * *", "Europe/Paris", datetime(2026, 10, 24, tzinfo=UTC), 3) == [
            "2026-10-24T00:30Z",
            "2026-10-25T00:30Z",  # 02:30 CEST; not again at 02:30 CET (01:30Z)
            "2026-10-26T01:30Z",
        ]

    def test_new_york_spring_forward(self) -> None:
        # 2026-03-08: 02:00 EST -> 03:00 EDT.
        assert occurrences(
            "30 2 * * *", "America/New_York", datetime(2026, 3, 7, tzinfo=UTC), 3
        ) == [
            "2026-03-07T07:30Z",
            "2026-03-08T07:00Z",  # 03:00 EDT
            "2026-03-09T06:30Z",
        ]

    def test_new_york_fall_back(self) -> None:
        # 2026-11-01: 02:00 EDT -> 01:00 EST; 02:30 happens once, 01:30 twice.
        assert occurrences(
            "30 2 * * *", "America/New_York", datetime(2026, 10, 31, tzinfo=UTC), 3
        ) == [
            "2026-10-31T06:30Z",
            "2026-11-01T07:30Z",  # 02:30 EST
            "2026-11-02T07:30Z",
        ]
        assert occurrences(
            "30 1 * * *", "America/New_York", datetime(2026, 10, 31, 12, tzinfo=UTC), 2
        ) == [
            "2026-11-01T05:30Z",  # 01:30 EDT, the first of the two
            "2026-11-02T06:30Z",
        ]

    def test_times_inside_one_gap_run_once(self) -> None:
        found = occurrences(
            "*/15 * * * *", "Europe/Paris", datetime(2026, 3, 29, 0, 40, tzinfo=UTC), 4
        )
        assert found == [
            "2026-03-29T00:45Z",  # 01:45 CET
            "2026-03-29T01:00Z",  # 02:00..02:45 do not exist: once, at 03:00 CEST
            "2026-03-29T01:15Z",
            "2026-03-29T01:30Z",
        ]

    def test_an_instant_inside_the_repeated_hour_finds_the_next_day(self) -> None:
        cadence = parse_cadence(
            CadenceType.CRON, "30 1 * * *", "America/New_York", now=NOW, min_interval_secs=60
        )
        # 06:00Z is 01:00 EST, inside the repeat; 01:30 already ran at 05:30Z.
        assert cadence.next_after(datetime(2026, 11, 1, 6, tzinfo=UTC)) == datetime(
            2026, 11, 2, 6, 30, tzinfo=UTC
        )


class TestCatchUp:
    def test_cron_runs_the_latest_and_counts_the_rest(self) -> None:
        cadence = parse_cadence(CadenceType.CRON, "0 * * * *", "UTC", now=NOW, min_interval_secs=60)
        due = datetime(2026, 1, 1, 1, tzinfo=UTC)
        caught = cadence.catch_up(due, datetime(2026, 1, 1, 5, 30, tzinfo=UTC))
        assert caught.occurrence == datetime(2026, 1, 1, 5, tzinfo=UTC)
        assert caught.skipped == 4
        assert caught.first_skipped == due
        assert caught.last_skipped == datetime(2026, 1, 1, 4, tzinfo=UTC)

    def test_interval_stays_on_its_grid(self) -> None:
        cadence = parse_cadence(CadenceType.INTERVAL, "10m", "UTC", now=NOW, min_interval_secs=60)
        caught = cadence.catch_up(NOW, NOW + timedelta(minutes=35))
        assert (caught.occurrence, caught.skipped) == (NOW + timedelta(minutes=30), 3)
        assert cadence.next_after(caught.occurrence) == NOW + timedelta(minutes=40)

    def test_nothing_missed(self) -> None:
        cadence = parse_cadence(CadenceType.INTERVAL, 3600, "UTC", now=NOW, min_interval_secs=60)
        caught = cadence.catch_up(NOW, NOW + timedelta(minutes=5))
        assert (caught.occurrence, caught.skipped, caught.first_skipped) == (NOW, 0, None)


class TestValidation:
    @pytest.mark.parametrize(
        ("kind", "value", "zone", "message"),
        [
            (CadenceType.CRON, "0 9 * *", "UTC", "has 4 fields, not 5"),
            (CadenceType.CRON, "0 9 * * * *", "UTC", "a seconds or year field is not standard"),
            (CadenceType.CRON, "61 9 * * *", "UTC", "minute value 61 is outside 0-59"),
            (CadenceType.CRON, "* * * * *", "UTC", None),
            (CadenceType.CRON, "0,1 9 * * *", "UTC", None),
            (CadenceType.CRON, "0 9 * * 1-5", "Mars/Olympus", "not an IANA time zone name"),
            (CadenceType.ONCE, "2025-12-31T23:00:00Z", "UTC", "not in the future"),
            (CadenceType.ONCE, "next tuesday", "UTC", "not an RFC 3339 date-time"),
            (CadenceType.INTERVAL, "30s", "UTC", "minimum interval is 60"),
            (CadenceType.INTERVAL, "fortnightly", "UTC", "not an interval"),
            (CadenceType.INTERVAL, 0, "UTC", "not an interval"),
            (CadenceType.INTERVAL, True, "UTC", "not an interval"),
            (CadenceType.CRON, 5, "UTC", "must be a non-empty string"),
        ],
    )
    def test_refusals_name_the_field_and_the_fix(
        self, kind: CadenceType, value: object, zone: str, message: str | None
    ) -> None:
        minimum = 120 if message is None else 60
        with pytest.raises(ScheduleValidationError) as caught:
            parse_cadence(kind, value, zone, now=NOW, min_interval_secs=minimum)
        expected = message or f"the minimum interval is {minimum} s"
        assert expected in str(caught.value)
        assert caught.value.field == ("timezone" if "zone" in expected else "cadence_value")
        assert caught.value.error_type == "validation_error"

    @pytest.mark.parametrize(
        ("value", "seconds"),
        [
            ("90", 90),
            ("90s", 90),
            ("15m", 900),
            ("2h", 7200),
            ("1d", 86400),
            ("PT1H30M", 5400),
            ("P1DT12H", 129600),
            (3600, 3600),
        ],
    )
    def test_interval_forms(self, value: object, seconds: int) -> None:
        cadence = parse_cadence(CadenceType.INTERVAL, value, "UTC", now=NOW, min_interval_secs=60)
        assert cadence.value == str(seconds)

    def test_once_without_offset_is_read_in_the_zone(self) -> None:
        cadence = parse_cadence(
            CadenceType.ONCE, "2026-03-29T02:30:00", "Europe/Paris", now=NOW, min_interval_secs=60
        )
        assert cadence.next_after(NOW) == datetime(2026, 3, 29, 1, tzinfo=UTC)
        assert cadence.next_after(datetime(2026, 3, 29, 1, tzinfo=UTC)) is None
