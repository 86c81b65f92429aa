"""Adding, listing and removing jobs: what the tools and the CLI share, checked before anything is stored."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

import crab

from crab_schedule.jobs import Job, JobStore, Mode, Origin, new_job_id
from crab_schedule.settings import ScheduleSettings
from crab_schedule.timing import format_time, make_trigger, next_fire

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
    redact: Callable[[str], str] | None = None,
) -> Job:
    """Check everything, then store one job; ``crab.UsageError`` (one line) and nothing stored otherwise.

    ``redact`` masks secrets in the text and name before they are stored (``crab.Redactor.text``)."""
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
    )
    await store.add(job)
    return job


def local_time(when: datetime, zone: str) -> str:
    """``2026-12-01 09:00 CET (08:00 UTC)``."""
    local = when.astimezone(ZoneInfo(zone))
    text = local.strftime("%Y-%m-%d %H:%M %Z")
    return text if zone == "UTC" else f"{text} ({when.strftime('%H:%M')} UTC)"


def describe_job(job: Job) -> str:
    """One line for lists."""
    upcoming = local_time(job.next_run, job.trigger.timezone) if job.next_run else "done"
    what = job.text if len(job.text) <= 60 else job.text[:59] + "…"
    last = f", last {job.last_status}" if job.last_status else ""
    label = f" {job.name!r}" if job.name else ""
    where = job.origin.destination
    return f"{job.id}{label} {job.mode} {job.trigger.describe()} → {where}; next {upcoming}{last}: {what}"


def job_json(job: Job) -> dict[str, object]:
    return {
        "id": job.id,
        **job.spec(),
        "created": format_time(job.created),
        "next_run": format_time(job.next_run) if job.next_run else None,
        "last_run": format_time(job.last_run) if job.last_run else None,
        "last_status": job.last_status,
        "last_error": job.last_error,
        "runs": job.runs,
    }
