"""Triggers: cron in a timezone across daylight-saving changes, intervals, once; bad input is one line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import crab
import pytest
from crab_schedule.timing import make_trigger, next_fire, parse_duration

BERLIN = ZoneInfo("Europe/Berlin")
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def fires(trigger, after: datetime, count: int) -> list[datetime]:
    out = []
    for _ in range(count):
        after = next_fire(trigger, after)
        out.append(after)
    return out


def test_weekday_cron_in_berlin_fires_at_nine_local_on_both_sides_of_spring_forward():
    trigger = make_trigger(cron="0 9 * * 1-5", timezone="Europe/Berlin", now=NOW)
    times = fires(trigger, datetime(2026, 3, 26, 12, tzinfo=UTC), 3)  # Thu, Fri, (weekend), Mon after the change
    assert [t.astimezone(BERLIN).strftime("%a %H:%M") for t in times] == ["Fri 09:00", "Mon 09:00", "Tue 09:00"]
    assert [t.hour for t in times] == [8, 7, 7]  # UTC+1 before 29 March 2026, UTC+2 after


def test_a_time_that_does_not_exist_at_spring_forward_runs_once_when_the_clock_jumps():
    trigger = make_trigger(cron="30 2 * * *", timezone="Europe/Berlin", now=NOW)
    times = fires(trigger, datetime(2026, 3, 28, 12, tzinfo=UTC), 2)
    assert times[0] == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST: 02:30 never happened
    assert times[1] == datetime(2026, 3, 30, 0, 30, tzinfo=UTC)  # 02:30 CEST the next night


def test_a_time_that_exists_twice_at_fall_back_runs_once():
    trigger = make_trigger(cron="30 2 * * *", timezone="Europe/Berlin", now=NOW)
    times = fires(trigger, datetime(2026, 10, 24, 12, tzinfo=UTC), 2)
    assert times[0] == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST, the first of the two
    assert times[1] == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)  # next day, 02:30 CET
    # asked from inside the repeated hour (the second 02:15), it does not fire again that night
    assert next_fire(trigger, datetime(2026, 10, 25, 1, 15, tzinfo=UTC)) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_hourly_cron_never_runs_twice_at_the_same_instant_across_fall_back():
    trigger = make_trigger(cron="0 * * * *", timezone="Europe/Berlin", now=NOW)
    times = fires(trigger, datetime(2026, 10, 24, 22, 30, tzinfo=UTC), 6)
    assert times == sorted(set(times))


def test_interval_counts_from_its_start_and_skips_what_was_missed():
    trigger = make_trigger(every="2h", timezone="UTC", now=NOW)
    assert trigger.start == NOW + timedelta(hours=2)
    assert next_fire(trigger, NOW) == NOW + timedelta(hours=2)
    # seven hours later (three runs missed): the next one is at +8h, not +4h
    assert next_fire(trigger, NOW + timedelta(hours=7)) == NOW + timedelta(hours=8)


def test_once_after_a_duration_or_at_a_local_time():
    assert next_fire(make_trigger(after="20m", timezone="UTC", now=NOW), NOW) == NOW + timedelta(minutes=20)
    at = make_trigger(at="2026-03-02T09:00", timezone="Europe/Berlin", now=NOW)
    assert at.start == datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    assert next_fire(at, at.start) is None  # done after its one run
    clock = make_trigger(at="11:00", timezone="UTC", now=NOW)  # 11:00 has passed today: tomorrow
    assert clock.start == datetime(2026, 3, 2, 11, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cron": "61 * * * *"}, "invalid cron expression '61 * * * *'"),
        ({"cron": "0 9 * *"}, "expected five fields"),
        ({"cron": "* * * * * *"}, "expected five fields"),
        ({"cron": "0 9 * * 1-5", "timezone": "Mars/Olympus"}, "unknown timezone 'Mars/Olympus'"),
        ({"cron": "0 9 * * *", "timezone": "../../etc/passwd"}, "unknown timezone"),
        ({"every": "soon"}, "invalid duration 'soon'"),
        ({"every": "10s"}, "shorter than the shortest interval"),
        ({"at": "2020-01-01T00:00"}, "is in the past"),
        ({"at": "tomorrowish"}, "invalid time 'tomorrowish'"),
        ({}, "say when"),
        ({"cron": "0 9 * * *", "every": "2h"}, "got cron, every"),
        ({"cron": "0 0 31 2 *"}, "cron expression '0 0 31 2 *' never fires"),
        ({"after": "99999999d"}, "invalid duration '99999999d': at most 3650d"),
        ({"after": "9" * 400 + "s"}, "at most 3650d"),
        ({"every": "99999999d"}, "invalid duration '99999999d': at most 3650d"),
        ({"after": 1e300}, "invalid duration in 1e+300s: at most 3650d"),
        ({"at": "9999-12-31T23:00-05:00"}, "outside the years 1 to 9999"),
    ],
)
def test_bad_schedules_are_one_line_usage_errors(kwargs, message):
    kwargs.setdefault("timezone", "UTC")
    with pytest.raises(crab.UsageError) as caught:
        make_trigger(now=NOW, min_interval=60, **kwargs)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_durations():
    assert parse_duration("1h30m") == 5400
    assert parse_duration("90s") == 90
    assert parse_duration("1d") == 86400
    with pytest.raises(crab.UsageError):
        parse_duration("0s")
