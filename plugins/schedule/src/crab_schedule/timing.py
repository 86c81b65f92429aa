"""When a job runs: triggers (cron with a timezone, every N, once), their parsing and the next fire time.

Cron fields are matched by croniter on local wall-clock times; zoneinfo turns each into an instant.
Across a daylight-saving change a time that does not exist (spring forward) runs at the same
instant the clock jumps to (02:30 → 03:30), and a time that exists twice (fall back) runs once, at
its first occurrence. Every time this module returns is an aware UTC ``datetime``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from crab import UsageError
from crab_jobs_kit import Trigger, TriggerKind, format_duration, format_time, parse_stored_time

Kind = TriggerKind
# Trigger and the stored-time helpers are crab-jobs-kit's (crab_jobs_kit), re-exported with what is built on them.
__all__ = [
    "Kind",
    "Trigger",
    "check_cron",
    "describe_seconds",
    "format_duration",
    "format_time",
    "make_trigger",
    "next_fire",
    "parse_at",
    "parse_duration",
    "parse_stored_time",
    "parse_timezone",
]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_MAX_CRON_STEPS = 10_000  # a year of minutes is far fewer matches than this before one lands
MAX_DURATION = 3650 * 86400.0
"""Longest ``in``/``every``: ten years (a longer one would leave ``datetime``'s range, year 9999)."""


def parse_duration(text: str) -> float:
    """``20m``, ``2h``, ``1h30m``, ``90s``, ``1d``, ``1w`` → seconds; ``UsageError`` otherwise."""
    cleaned = text.strip().replace(" ", "")
    matches = list(_DURATION.finditer(cleaned))
    if not cleaned or not matches or "".join(m.group(0) for m in matches) != cleaned:
        raise UsageError(f"invalid duration {text!r}: write a number with a unit, like 90s, 20m, 2h, 1h30m or 1d")
    seconds = sum(float(m.group(1)) * _UNIT[m.group(2).lower()] for m in matches)
    if seconds <= 0:
        raise UsageError(f"invalid duration {text!r}: it must be longer than zero")
    return _bounded(seconds, repr(text))


def _bounded(seconds: float, shown: str) -> float:
    if not seconds <= MAX_DURATION:  # also inf, from a number too long for a float
        raise UsageError(f"invalid duration {shown}: at most {format_duration(MAX_DURATION)} (ten years)")
    return seconds


def describe_seconds(seconds: float) -> str:
    """``1800`` → ``30m``; ``0.5`` → ``0.5s`` (format_duration rounds to whole seconds)."""
    return format_duration(seconds) if seconds >= 1 and seconds == int(seconds) else f"{seconds:g}s"


def parse_timezone(name: str) -> ZoneInfo:
    """An IANA zone (``Europe/Berlin``, ``UTC``); ``UsageError`` naming the bad one otherwise."""
    if not name or name.startswith(("/", ".")) or ".." in name or "\\" in name or "\x00" in name:
        raise UsageError(f"unknown timezone {name!r}: use an IANA name such as Europe/Berlin or UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise UsageError(f"unknown timezone {name!r}: use an IANA name such as Europe/Berlin or UTC") from None


def check_cron(expression: str) -> str:
    """The expression, stripped, if croniter accepts it as five fields (or ``@daily`` and kin)."""
    from croniter import croniter

    text = " ".join(expression.split())
    fields = text.split(" ")
    bad = (
        f"invalid cron expression {expression!r}: expected five fields "
        '(minute hour day month weekday), e.g. "0 9 * * 1-5"'
    )
    if not text or (not text.startswith("@") and len(fields) != 5):
        raise UsageError(bad)
    try:
        valid = croniter.is_valid(text)
    except Exception:  # croniter raises its own types on some malformed input
        valid = False
    if not valid:
        raise UsageError(bad)
    try:
        # Fields can each be valid and never meet (31 February): croniter then gives up searching.
        croniter(text, datetime(2000, 1, 1)).get_next(datetime)
    except Exception:  # CroniterBadDateError, or its kin on other odd input
        raise UsageError(
            f"cron expression {expression!r} never fires: no date matches its day and month fields"
        ) from None
    return text


def parse_at(text: str, zone: ZoneInfo, now: datetime) -> datetime:
    """``2026-12-24T09:00`` (in ``zone`` unless it carries an offset or ``Z``), ``2026-12-24 09:00``
    or ``09:00`` (the next such wall-clock time) → aware UTC; ``UsageError`` otherwise."""
    raw = text.strip()
    clock = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?", raw)
    if clock:
        hour, minute, second = int(clock.group(1)), int(clock.group(2)), int(clock.group(3) or 0)
        if hour > 23 or minute > 59 or second > 59:
            raise UsageError(f"invalid time {text!r}: write HH:MM (00:00 to 23:59)")
        local_now = now.astimezone(zone)
        day = local_now.date()
        for _ in range(3):
            candidate = datetime(day.year, day.month, day.day, hour, minute, second, tzinfo=zone).astimezone(UTC)
            if candidate > now:
                return candidate
            day = day + timedelta(days=1)
        raise UsageError(f"invalid time {text!r}")  # unreachable: a wall-clock time recurs daily
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00") if raw.endswith("Z") else raw)
    except ValueError:
        raise UsageError(
            f"invalid time {text!r}: write an ISO date and time "
            "(2026-12-24T09:00, with +01:00 or Z for an offset) or HH:MM"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-05:00 is in year 10000 in UTC
        raise UsageError(f"invalid time {text!r}: it lies outside the years 1 to 9999 in UTC") from None


def next_fire(trigger: Trigger, after: datetime) -> datetime | None:
    """The first instant strictly after ``after`` at which ``trigger`` fires (None: never again)."""
    if trigger.kind == "once":
        assert trigger.start is not None
        return trigger.start if trigger.start > after else None
    if trigger.kind == "every":
        assert trigger.every is not None
        assert trigger.start is not None
        if trigger.start > after:
            return trigger.start
        steps = int((after - trigger.start).total_seconds() // trigger.every) + 1
        return trigger.start + timedelta(seconds=steps * trigger.every)
    return _next_cron(trigger, after)


def _next_cron(trigger: Trigger, after: datetime) -> datetime:
    from croniter import croniter

    assert trigger.cron is not None
    zone = ZoneInfo(trigger.timezone)
    # Walk naive wall-clock matches; start an hour early so a time repeated after a fall-back
    # change is not skipped when ``after`` lies in its second occurrence.
    local = after.astimezone(zone).replace(tzinfo=None) - timedelta(hours=1)
    walker = croniter(trigger.cron, local)
    for _ in range(_MAX_CRON_STEPS):
        try:
            wall: datetime = walker.get_next(datetime)
        except Exception:  # CroniterBadDateError: a stored expression (from before check_cron) that never fires
            break
        instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if instant > after:
            return instant
    raise UsageError(f"cron expression {trigger.cron!r} never fires")


def make_trigger(
    *,
    cron: str | None = None,
    every: str | float | None = None,
    at: str | None = None,
    after: str | float | None = None,
    timezone: str,
    now: datetime,
    min_interval: float = 0.0,
) -> Trigger:
    """Exactly one of ``cron``, ``every``, ``at``, ``after`` → a checked ``Trigger`` (``UsageError``
    with one line naming what is wrong otherwise). Nothing is stored here."""
    options = (("cron", cron), ("every", every), ("at", at), ("in", after))
    given = [name for name, value in options if value not in (None, "")]
    if len(given) != 1:
        raise UsageError(
            "say when: exactly one of cron (with a timezone), every (like 2h), at (a time) or in (like 20m)"
            + (f"; got {', '.join(given)}" if given else "")
        )
    zone = parse_timezone(timezone)
    if cron:
        expression = check_cron(cron)
        return Trigger("cron", timezone=zone.key, cron=expression)
    if every not in (None, ""):
        seconds = every if isinstance(every, int | float) else parse_duration(str(every))
        if seconds <= 0:
            raise UsageError("every must be longer than zero")
        _bounded(seconds, f"every {seconds:g}s")
        if seconds < min_interval:
            raise UsageError(
                f"every {format_duration(seconds)} is shorter than the shortest interval allowed "
                f"({format_duration(min_interval)}, [plugins.schedule] min_interval)"
            )
        return Trigger("every", timezone=zone.key, every=float(seconds), start=now + timedelta(seconds=seconds))
    if at:
        when = parse_at(at, zone, now)
        if when <= now:
            raise UsageError(f"time {at!r} is in the past ({when:%Y-%m-%d %H:%M} UTC); give a future time")
        return Trigger("once", timezone=zone.key, start=when)
    assert after is not None
    seconds = after if isinstance(after, int | float) else parse_duration(str(after))
    if seconds <= 0:
        raise UsageError("in must be longer than zero")
    _bounded(seconds, f"in {seconds:g}s")
    return Trigger("once", timezone=zone.key, start=now + timedelta(seconds=seconds))
