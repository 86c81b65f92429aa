"""Adding, listing and removing jobs: what the tools and the CLI share, checked before anything is stored."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import crab

from crab_schedule.jobs import Job, JobStore, Mode, Origin, new_job_id
from crab_schedule.settings import ScheduleSettings
from crab_schedule.timing import MAX_DURATION, describe_seconds, format_time, make_trigger, next_fire, parse_duration

MAX_TEXT = 4000  # characters of a reminder or prompt
MAX_NAME = 80  # characters of a job's label: one line of `crab schedule list`
PERMISSION_MODES = ("read-only", "ask", "yolo")


async def add_job(
    store: JobStore,
    settings: ScheduleSettings,
    *,
    now: datetime,
    mode: Mode,
    text: str,
    origin: Origin,
    permissions: str,
    cron: str | None = None,
    timezone: str | None = None,
    every: str | float | None = None,
    at: str | None = None,
    after: str | float | None = None,
    name: str = "",
    timeout: str | float | None = None,
    longest_timeout: float | None = None,
    redact: Callable[[str], str] | None = None,
) -> Job:
    """Check everything, then store one job; ``crab.UsageError`` (one line) and nothing stored otherwise.

    ``timeout`` (an agent job's: ``10m`` or seconds) may be at most ``longest_timeout`` when that
    is given (the model's tool: it may shorten ``job_timeout``, never lengthen it). ``redact``
    masks secrets in the text and name before they are stored (``crab.secrets.Redactor.text``)."""
    if mode not in ("reminder", "agent"):
        raise crab.UsageError(f"invalid mode {mode!r}: use reminder (sends a text) or agent (runs a prompt)")
    text = (text or "").strip()
    if not text:
        raise crab.UsageError("nothing to send: give a message (reminder) or a prompt (agent job)")
    if len(text) > MAX_TEXT:
        what = "prompt" if mode == "agent" else "message"
        raise crab.UsageError(f"the {what} is {len(text)} characters; at most {MAX_TEXT}")
    if permissions not in PERMISSION_MODES:
        raise crab.UsageError(f"invalid permissions {permissions!r}: use one of {', '.join(PERMISSION_MODES)}")
    name = name.strip()
    if len(name) > MAX_NAME:
        raise crab.UsageError(f"the name is {len(name)} characters; at most {MAX_NAME}: give a shorter label")
    seconds = job_timeout(timeout, mode, longest_timeout)
    trigger = make_trigger(
        cron=cron,
        every=every,
        at=at,
        after=after,
        timezone=timezone or settings.timezone,
        now=now,
        min_interval=settings.min_interval,
    )
    first = next_fire(trigger, now)
    if first is None:
        raise crab.UsageError("that schedule never fires after now")
    active = await store.list()
    if len(active) >= settings.max_jobs:
        raise crab.UsageError(
            f"the job store holds {len(active)} active jobs, the most allowed "
            "([plugins.schedule] max_jobs); remove some first"
        )
    mask = redact or (lambda value: value)
    job = Job(
        id=new_job_id(),
        trigger=trigger,
        mode=mode,
        text=mask(text),
        name=mask(name),
        origin=origin,
        permissions=permissions,
        created=now,
        next_run=first,
        timeout=seconds,
    )
    await store.add(job)
    return job


def job_timeout(timeout: str | float | None, mode: str, longest: float | None = None) -> float | None:
    """Seconds of a job's own timeout (None: none given); ``crab.UsageError`` when it cannot be one."""
    if timeout in (None, ""):
        return None
    if mode != "agent":
        raise crab.UsageError("a timeout is for agent jobs (a prompt); a reminder only sends its text")
    seconds = float(timeout) if isinstance(timeout, int | float) else parse_duration(str(timeout))
    if not 0 < seconds <= MAX_DURATION:
        raise crab.UsageError(f"invalid timeout {timeout!r}: give a duration such as 10m, at most ten years")
    if longest is not None and seconds > longest:
        raise crab.UsageError(
            f"a timeout of {describe_seconds(seconds)} is longer than the {describe_seconds(longest)} "
            "allowed ([plugins.schedule] job_timeout); a scheduled job may only be given a shorter one"
        )
    return seconds


def local_time(when: datetime, zone: str) -> str:
    """``2026-12-01 09:00 CET (08:00 UTC)``."""
    local = when.astimezone(ZoneInfo(zone))
    text = local.strftime("%Y-%m-%d %H:%M %Z")
    return text if zone == "UTC" else f"{text} ({when.strftime('%H:%M')} UTC)"


def running(job: Job, now: datetime) -> bool:
    """A worker holds a live claim on it: it runs right now (a lapsed claim is a stopped worker's)."""
    return job.claimed_by is not None and job.lease_until is not None and job.lease_until > now


def describe_job(job: Job, now: datetime) -> str:
    """One line for lists."""
    if running(job, now):
        when = f"running now on {job.claimed_by}"
    else:
        when = f"next {local_time(job.next_run, job.trigger.timezone) if job.next_run else 'done'}"
    what = job.text if len(job.text) <= 60 else job.text[:59] + "…"
    last = f", last {job.last_status}" if job.last_status else ""
    label = f" {job.name!r}" if job.name else ""
    where = job.origin.destination
    return f"{job.id}{label} {job.mode} {job.trigger.describe()} → {where}; {when}{last}: {what}"


def job_json(job: Job, now: datetime) -> dict[str, object]:
    return {
        "id": job.id,
        **job.spec(),
        "created": format_time(job.created),
        "next_run": format_time(job.next_run) if job.next_run else None,
        "running": running(job, now),
        "claimed_by": job.claimed_by,
        "lease_until": format_time(job.lease_until) if job.lease_until else None,
        "last_run": format_time(job.last_run) if job.last_run else None,
        "last_status": job.last_status,
        "last_error": job.last_error,
        "runs": job.runs,
    }
