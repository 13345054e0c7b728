"""What a cadence accepts, and the DST rule checked against a minute-by-minute oracle:
canonical IANA zones, standard cron, RFC 3339 instants, bounded intervals, the minimum
interval in real time, and exact catch-up after downtime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from toolcage.host_bindings._scheduler import (
    Cadence,
    CadenceType,
    ScheduleValidationError,
    canonical_zone,
    parse_cadence,
)

from .oracle import Wall, cron_oracle

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def cron(expression: str, zone: str = "Etc/UTC", minimum: int = 60, now: datetime = NOW) -> Cadence:
    return parse_cadence(CadenceType.CRON, expression, zone, now=now, min_interval_secs=minimum)


def refusal(kind: CadenceType, value: object, zone: str = "Etc/UTC") -> ScheduleValidationError:
    with pytest.raises(ScheduleValidationError) as caught:
        parse_cadence(kind, value, zone, now=NOW, min_interval_secs=60)
    return caught.value


class TestZones:
    @pytest.mark.parametrize(
        ("given", "stored"),
        [
            ("Europe/Paris", "Europe/Paris"),
            ("US/Eastern", "America/New_York"),
            ("UTC", "Etc/UTC"),
            ("utc", "Etc/UTC"),
            ("Asia/Calcutta", "Asia/Kolkata"),
            ("EST5EDT", "America/New_York"),
            ("Australia/LHI", "Australia/Lord_Howe"),
            ("europe/oslo", "Europe/Oslo"),
        ],
    )
    def test_links_and_case_resolve_to_the_canonical_name(self, given: str, stored: str) -> None:
        assert canonical_zone(given) == stored

    @pytest.mark.parametrize(
        ("name", "says"),
        [
            ("localtime", "not an IANA time zone name"),
            ("posixrules", "not an IANA time zone name"),
            ("Factory", "not an IANA time zone name"),
            ("posix/Europe/Paris", "drop the posix/ prefix"),
            ("right/America/New_York", "drop the right/ prefix"),
            ("Mars/Olympus", "such as 'Europe/Paris'"),
            ("../../etc/passwd", "not an IANA time zone name"),
        ],
    )
    def test_host_aliases_and_other_trees_are_refused(self, name: str, says: str) -> None:
        with pytest.raises(ScheduleValidationError) as caught:
            canonical_zone(name)
        assert caught.value.field == "timezone"
        assert says in str(caught.value)


class TestCronSyntax:
    @pytest.mark.parametrize(
        ("expression", "first"),
        [
            ("@hourly", datetime(2026, 1, 1, 1, tzinfo=UTC)),
            ("@daily", datetime(2026, 1, 2, tzinfo=UTC)),
            ("@midnight", datetime(2026, 1, 2, tzinfo=UTC)),
            ("@weekly", datetime(2026, 1, 4, tzinfo=UTC)),  # a Sunday
            ("@monthly", datetime(2026, 2, 1, tzinfo=UTC)),
            ("@yearly", datetime(2027, 1, 1, tzinfo=UTC)),
            ("@ANNUALLY", datetime(2027, 1, 1, tzinfo=UTC)),
            ("0 9 * * mon-fri", datetime(2026, 1, 1, 9, tzinfo=UTC)),  # a Thursday
            ("0 9 * JAN,feb 7", datetime(2026, 1, 4, 9, tzinfo=UTC)),  # 7 is Sunday
            ("0 0-12/6 * * *", datetime(2026, 1, 1, 6, tzinfo=UTC)),
            ("0 0 13 * 5", datetime(2026, 1, 2, tzinfo=UTC)),  # day 13 or a Friday
            ("0 0 */2 * 5", datetime(2026, 1, 9, tzinfo=UTC)),  # '*/2' starts with '*': and
            ("0 0 29 2 *", datetime(2028, 2, 29, tzinfo=UTC)),
        ],
    )
    def test_standard_forms_and_macros(self, expression: str, first: datetime) -> None:
        assert cron(expression, minimum=60).next_after(NOW) == first

    @pytest.mark.parametrize(
        ("expression", "says"),
        [
            ("0 0 L * *", "'L' (last)"),
            ("0 0 * * 5L", "'L' (last)"),
            ("0 0 15W * *", "'W' (nearest weekday)"),
            ("0 0 LW * *", "'LW' (last weekday)"),
            ("0 0 * * 1#2", "'#' (nth weekday)"),
            ("0 0 ? * 1", "'?' (no specific value)"),
            ("H * * * *", "'H' (hashed value)"),
            ("H(0-29) * * * *", "'H' (hashed value)"),
            ("R 0 * * *", "'R' (random value)"),
            ("0~30 * * * *", "'~' (random value)"),
            ("@reboot", "unknown macro"),
            ("@every 5m", "unknown macro"),
            ("0 0 9 * * *", "6 fields"),
            ("0 0 9 * * * 2027", "7 fields"),
            ("5/15 * * * *", "steps from a single value"),
            ("*/90 * * * *", "step 90 is outside 1-59"),
            ("0 0 30-1 * *", "runs backwards"),
            ("0 0 31 2,4 *", "never fires"),
            ("0 24 * * *", "hour value 24 is outside 0-23"),
            ("0 9 * * thurs", "'thurs', not a value"),
        ],
    )
    def test_every_extension_is_refused_saying_what_is_supported(
        self, expression: str, says: str
    ) -> None:
        refused = refusal(CadenceType.CRON, expression)
        assert refused.field == "cadence_value"
        assert says in str(refused)
        assert "supported: 5 fields" in str(refused)
        assert "@hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually" in str(refused)

    def test_the_macro_is_stored_as_written(self) -> None:
        assert cron(" @Daily ").value == "@daily"
        assert cron("0  9 *  * 1-5").value == "0 9 * * 1-5"


class TestInstants:
    @pytest.mark.parametrize(
        ("text", "instant"),
        [
            ("2026-06-01T09:00:00Z", datetime(2026, 6, 1, 9, tzinfo=UTC)),
            ("2026-06-01t09:00:00z", datetime(2026, 6, 1, 9, tzinfo=UTC)),
            ("2026-06-01T09:00:00.5+02:00", datetime(2026, 6, 1, 7, 0, 0, 500000, tzinfo=UTC)),
            ("2026-06-01T09:00:00-03:30", datetime(2026, 6, 1, 12, 30, tzinfo=UTC)),
            ("2026-06-01T09:00:00", datetime(2026, 6, 1, 7, tzinfo=UTC)),  # Paris, CEST
        ],
    )
    def test_rfc_3339(self, text: str, instant: datetime) -> None:
        cadence = parse_cadence(
            CadenceType.ONCE, text, "Europe/Paris", now=NOW, min_interval_secs=60
        )
        assert cadence.next_after(NOW) == instant

    @pytest.mark.parametrize(
        ("text", "says"),
        [
            ("2026-06-01 09:00:00Z", "with a space; RFC 3339 uses 'T'"),
            ("2026-06-01", "a date without a time"),
            ("2026-W23-1T09:00:00Z", "ISO week or ordinal date"),
            ("2026-152T09:00:00Z", "ISO week or ordinal date"),
            ("20260601T090000Z", "not an RFC 3339 date-time"),
            ("2026-06-01T09:00Z", "has no seconds"),
            ("2026-06-30T23:59:60Z", "leap second"),
            ("2026-02-30T09:00:00Z", "not a valid date and time"),
            ("2026-06-01T09:00:00+24:00", "offset beyond"),
            ("2040-06-01T09:00:00Z", "more than 3650 days ahead"),
            ("9999-12-31T23:59:59-23:59", "outside the years 0001-9999"),
            ("9999-12-31T23:59:59", "outside the years 0002-9997"),
        ],
    )
    def test_everything_else_is_refused_on_the_field(self, text: str, says: str) -> None:
        refused = refusal(CadenceType.ONCE, text)
        assert refused.field == "cadence_value"
        assert says in str(refused)


class TestIntervals:
    @pytest.mark.parametrize(
        ("value", "says"),
        [
            ("99999999999999999999d", "not an interval"),
            ("999999999d", "at most 315360000 s"),
            (10**30, "at most 315360000 s"),
            ("9" * 300, "not an interval"),
            ("P99999W", "at most 315360000 s"),
            ("PT", "not an interval"),
            (1.5, "not an interval"),
        ],
    )
    def test_bounds_are_validation_errors_on_the_field(self, value: object, says: str) -> None:
        refused = refusal(CadenceType.INTERVAL, value)
        assert refused.field == "cadence_value"
        assert says in str(refused)
        assert len(str(refused)) < 300

    def test_the_longest_interval_is_accepted(self) -> None:
        cadence = parse_cadence(
            CadenceType.INTERVAL, "3650d", "Etc/UTC", now=NOW, min_interval_secs=60
        )
        assert cadence.next_after(NOW) == NOW + timedelta(days=3650)


class TestMinimumIntervalInRealTime:
    def test_a_fixed_time_pair_closes_up_across_spring_forward(self) -> None:
        # 01:30 EST, then 02:30 (in the gap) at 03:00 EDT: 30 minutes of real time.
        with pytest.raises(ScheduleValidationError) as caught:
            cron("30 1,2 * * *", "America/New_York", minimum=3600)
        assert "fires 1800 s apart" in str(caught.value)
        assert "around 2026-03-08T07:00:00Z" in str(caught.value)
        assert caught.value.field == "cadence_value"

    def test_half_hour_shift_repeats_a_quarter_to_the_hour_after_30_minutes(self) -> None:
        # Lord Howe falls back 30 minutes: 01:45 happens twice, 30 minutes apart.
        with pytest.raises(ScheduleValidationError) as caught:
            cron("45 * * * *", "Australia/Lord_Howe", minimum=3600)
        assert "fires 1800 s apart" in str(caught.value)

    @pytest.mark.parametrize(
        "zone", ["America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Santiago"]
    )
    def test_hourly_on_the_hour_is_never_closer_than_an_hour(self, zone: str) -> None:
        cron("0 * * * *", zone, minimum=3600)
        cron("0 9 * * *", zone, minimum=86400 - 3600)  # 23 h on a spring-forward day

    def test_the_closest_wall_clock_gap_counts_too(self) -> None:
        with pytest.raises(ScheduleValidationError) as caught:
            cron("0 9,10 * * *", "Etc/UTC", minimum=7200)
        assert "fires 3600 s apart" in str(caught.value)
        cron("0 9 * * 1,3", "Etc/UTC", minimum=2 * 86400)
        with pytest.raises(ScheduleValidationError):
            cron("0 9 * * 1,2", "Etc/UTC", minimum=2 * 86400)


class TestCatchUpIsExact:
    @pytest.mark.parametrize(
        ("expression", "zone", "real_time"),
        [
            ("*/15 * * * *", "Australia/Lord_Howe", True),
            ("45 * * * *", "America/New_York", True),
            ("30 1,2 * * *", "Europe/London", False),
            ("0,30 0-1 * * *", "America/Santiago", False),
        ],
    )
    def test_forty_days_across_a_change_match_the_oracle(
        self, expression: str, zone: str, real_time: bool
    ) -> None:
        start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 4, 10, 7, 7, tzinfo=UTC)
        matches = Wall.of(expression)
        expected = cron_oracle(matches, real_time, zone, start, end)
        cadence = cron(expression, zone, now=start - timedelta(days=1))
        due = cadence.next_after(start - timedelta(microseconds=1))
        assert due == expected[0]
        caught = cadence.catch_up(due, end)
        assert caught.occurrence == expected[-1]
        assert caught.skipped == len(expected) - 1
        assert (caught.first_skipped, caught.last_skipped) == (expected[0], expected[-2])
        following = cadence.next_after(caught.occurrence)
        assert following is not None
        assert following > end

    def test_years_of_downtime_of_an_every_minute_cron(self) -> None:
        cadence = cron("* * * * *", "Europe/London")
        due, now = NOW, NOW + timedelta(days=3 * 365, seconds=30)
        caught = cadence.catch_up(due, now)
        # Real time: every minute happens once, whatever the clock does.
        assert caught.skipped == 3 * 365 * 1440
        assert caught.occurrence == now.replace(second=0)
        assert caught.last_skipped == caught.occurrence - timedelta(minutes=1)

    def test_nothing_missed_keeps_the_due_occurrence(self) -> None:
        cadence = cron("*/15 * * * *")
        caught = cadence.catch_up(NOW, NOW + timedelta(minutes=14))
        assert (caught.occurrence, caught.skipped, caught.first_skipped) == (NOW, 0, None)

    def test_interval_arithmetic(self) -> None:
        cadence = parse_cadence(
            CadenceType.INTERVAL, "15m", "Etc/UTC", now=NOW, min_interval_secs=60
        )
        caught = cadence.catch_up(NOW, NOW + timedelta(days=1000, minutes=7))
        assert caught.skipped == 1000 * 96
        assert caught.occurrence == NOW + timedelta(days=1000)
