"""A watchlist's schedule: cron in a time zone, fired at its wall-clock times across the clocks' changes, and
its smallest gap between two firings found over the coming year."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice

import pytest

from chat.schedules import InvalidSchedule, InvalidTimezone, Schedule

PARIS = "Europe/Paris"
HOUR = timedelta(hours=1)
# 2026: Paris moves to summer time on March 29 (02:00 -> 03:00) and back on October 25 (03:00 -> 02:00).
NEW_YEAR = datetime(2026, 1, 1, tzinfo=UTC)


def local_firings(cron: str, zone: str, after: datetime, count: int) -> list[str]:
    schedule = Schedule.parse(cron, zone)
    return [
        f"{instant.astimezone(schedule.zone):%Y-%m-%d %H:%M%z}" for instant in islice(schedule.firings(after), count)
    ]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (
            datetime(2026, 3, 26, tzinfo=UTC),
            ["2026-03-26 07:30+0100", "2026-03-27 07:30+0100", "2026-03-30 07:30+0200", "2026-03-31 07:30+0200"],
        ),
        (
            datetime(2026, 10, 22, tzinfo=UTC),
            ["2026-10-22 07:30+0200", "2026-10-23 07:30+0200", "2026-10-26 07:30+0100", "2026-10-27 07:30+0100"],
        ),
    ],
    ids=["march", "october"],
)
def test_a_weekday_morning_schedule_fires_at_0730_in_paris_on_both_sides_of_a_change(after, expected):
    assert local_firings("30 7 * * 1-5", PARIS, after, 4) == expected


def test_the_next_firing_is_an_instant_in_utc():
    schedule = Schedule.parse("30 7 * * 1-5", PARIS)

    assert schedule.next_after(datetime(2026, 3, 27, 6, 30, tzinfo=UTC)) == datetime(2026, 3, 30, 5, 30, tzinfo=UTC)
    assert schedule.next_after(datetime(2026, 3, 27, 6, 29, tzinfo=UTC)) == datetime(2026, 3, 27, 6, 30, tzinfo=UTC)


def test_a_time_the_clocks_skip_comes_as_long_after_the_jump_and_a_repeated_time_fires_once():
    skipped = local_firings("30 2 * * *", PARIS, datetime(2026, 3, 27, 12, tzinfo=UTC), 3)
    repeated = local_firings("30 2 * * *", PARIS, datetime(2026, 10, 24, 12, tzinfo=UTC), 3)

    assert skipped == ["2026-03-28 02:30+0100", "2026-03-29 03:30+0200", "2026-03-30 02:30+0200"]
    assert repeated == ["2026-10-25 02:30+0200", "2026-10-26 02:30+0100", "2026-10-27 02:30+0100"]


def test_an_hourly_schedule_fires_once_per_hour_of_the_wall_clock_across_both_changes():
    spring = local_firings("0 * * * *", PARIS, datetime(2026, 3, 28, 23, 30, tzinfo=UTC), 4)
    autumn = local_firings("0 * * * *", PARIS, datetime(2026, 10, 24, 22, 30, tzinfo=UTC), 4)

    assert spring == [
        "2026-03-29 01:00+0100",
        "2026-03-29 03:00+0200",
        "2026-03-29 04:00+0200",
        "2026-03-29 05:00+0200",
    ]
    assert autumn == [
        "2026-10-25 01:00+0200",
        "2026-10-25 02:00+0200",
        "2026-10-25 03:00+0100",
        "2026-10-25 04:00+0100",
    ]


@pytest.mark.parametrize(
    ("cron", "zone", "minimum", "gap_s"),
    [
        ("*/30 * * * *", "UTC", HOUR, 1800),
        ("0 * * * *", PARIS, HOUR, None),  # equal is allowed, the changes of the clocks included
        ("30 * * * *", PARIS, HOUR, None),
        ("0 * * * *", "UTC", 2 * HOUR, 3600),
        ("0 9,17 * * *", "UTC", 8 * HOUR, None),
        ("0 9,17 * * *", "UTC", 8 * HOUR + timedelta(seconds=1), 28800),
        ("0 22 * * * ", "UTC", timedelta(days=1), None),
        ("0 2,22 * * *", "UTC", 4 * HOUR + timedelta(seconds=1), 14400),  # 22:00 to 02:00 the next day
        ("0 0 1,31 * *", "UTC", timedelta(days=1, seconds=1), 86400),  # the 31st to the 1st
        ("0 1,3 * * *", PARIS, 2 * HOUR, 3600),  # two hours on the wall clock, one on the March night
        ("0 9 * * 1", PARIS, timedelta(days=7), 7 * 86400 - 3600),  # the week in which the clocks go forward
        ("0 9 * * 1", PARIS, timedelta(days=7) - HOUR, None),
        ("* * * * *", PARIS, timedelta(0), None),  # BRIEFS_MIN_INTERVAL=0: no minimum
    ],
)
def test_the_closest_two_firings_over_a_year_are_found(cron, zone, minimum, gap_s):
    too_close = Schedule.parse(cron, zone).closest_firings(minimum, NEW_YEAR)

    assert (too_close.gap_s if too_close else None) == gap_s
    if too_close is not None:
        assert too_close.first < too_close.second


def test_every_minute_passes_a_one_minute_minimum_across_the_changes_of_the_clocks():
    assert Schedule.parse("* * * * *", PARIS).closest_firings(timedelta(minutes=1), NEW_YEAR) is None


@pytest.mark.parametrize(
    "cron",
    ["* * * *", "0 0 * * * *", "@daily", "61 * * * *", "0 0 31 2 *", "H * * * *", "R 9 * * *", "0 9 * * mon-xyz", ""],
)
def test_anything_but_a_five_field_cron_that_can_fire_is_refused(cron):
    with pytest.raises(InvalidSchedule):
        Schedule.parse(cron, "UTC")


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "../../etc/passwd", "CEST"])
def test_an_unknown_zone_is_refused(zone):
    with pytest.raises(InvalidTimezone):
        Schedule.parse("0 9 * * *", zone)


def test_fields_are_kept_single_spaced():
    assert Schedule.parse("  30   7 * *\t1-5 ", PARIS).cron == "30 7 * * 1-5"
