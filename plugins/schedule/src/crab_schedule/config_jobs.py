"""Jobs declared in the user's config, ``[plugins.schedule.jobs.<name>]`` (trust-only: a project
cannot schedule work on its own), checked when the config loads and synced into the job store
when ``crab serve`` starts the scheduler.

A declared job has ``cron`` (with ``timezone``) or ``every``, ``message`` or ``prompt``, and may
have ``to = "CHANNEL:ADDRESS"`` (default: the schedule log), ``permissions`` (agent jobs;
default ``[crab] permissions``) and ``timeout`` (agent jobs; default ``job_timeout``). Its id in
the store is ``config-<name>``; editing it replaces the stored job, removing it from the config
removes the stored one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import crab

from crab_schedule.adding import PERMISSION_MODES, job_timeout
from crab_schedule.jobs import Job, JobStore, Origin
from crab_schedule.timing import Trigger, make_trigger, next_fire

PREFIX = "config-"
_EXPECTED = {
    "cron": 'a five-field cron expression (minute hour day month weekday), e.g. "0 9 * * 1-5"',
    "timezone": "an IANA timezone such as Europe/Berlin or UTC",
    "every": "an interval such as 30m, 2h or 1d",
}
KEYS = ("cron", "timezone", "every", "message", "prompt", "to", "permissions", "timeout")


def _path(name: str, key: str | None = None) -> tuple[str, ...]:
    return ("plugins", "schedule", "jobs", name, *((key,) if key else ()))


def check_jobs(jobs: Any, *, timezone: str = "UTC", now: datetime | None = None) -> None:
    """Raise ``crab.InvalidValue`` naming the first bad declared job's key."""
    from datetime import UTC

    if jobs is None:
        return
    if not isinstance(jobs, Mapping):
        raise crab.InvalidValue(("plugins", "schedule", "jobs"), "a table of jobs", jobs)
    moment = now or datetime.now(UTC)
    for name, job in jobs.items():
        if not isinstance(job, Mapping):
            raise crab.InvalidValue(_path(name), "a table (cron or every, message or prompt)", job)
        for key, value in job.items():
            if key not in KEYS:
                raise crab.InvalidValue(_path(name, key), f"one of the keys {', '.join(KEYS)}", key)
            if not isinstance(value, str) or not value.strip():
                raise crab.InvalidValue(_path(name, key), "a non-empty string", value)
        if ("message" in job) == ("prompt" in job):
            raise crab.InvalidValue(_path(name), "exactly one of message or prompt", dict(job))
        if ("cron" in job) == ("every" in job):
            raise crab.InvalidValue(_path(name), "exactly one of cron or every", dict(job))
        try:
            make_trigger(
                cron=job.get("cron"), every=job.get("every"), timezone=job.get("timezone") or timezone, now=moment
            )
        except crab.UsageError as exc:
            key = "timezone" if "timezone" in str(exc) else ("cron" if "cron" in job else "every")
            raise crab.InvalidValue(_path(name, key), _EXPECTED[key], job.get(key)) from None
        to = job.get("to")
        if to is not None and (":" not in to or not all(to.partition(":")[::2])):
            raise crab.InvalidValue(_path(name, "to"), "CHANNEL:ADDRESS, e.g. telegram:123", to)
        permissions = job.get("permissions")
        if permissions is not None and permissions not in PERMISSION_MODES:
            raise crab.InvalidValue(_path(name, "permissions"), f"one of {', '.join(PERMISSION_MODES)}", permissions)
        try:
            job_timeout(job.get("timeout"), "agent" if "prompt" in job else "reminder")
        except crab.UsageError:
            raise crab.InvalidValue(
                _path(name, "timeout"), "a duration such as 10m, for an agent job (prompt)", job.get("timeout")
            ) from None


def declared_job(
    name: str,
    job: Mapping[str, str],
    *,
    timezone: str,
    permissions: str,
    now: datetime,
    redact: Callable[[str], str] = str,
) -> Job:
    trigger = make_trigger(
        cron=job.get("cron"), every=job.get("every"), timezone=job.get("timezone") or timezone, now=now
    )
    channel, _, address = (job.get("to") or "").partition(":")
    return Job(
        id=f"{PREFIX}{name}",
        trigger=trigger,
        mode="agent" if "prompt" in job else "reminder",
        text=redact((job.get("prompt") or job.get("message") or "").strip()),
        name=name,
        origin=Origin("config", None, channel or None, address or None),
        permissions=job.get("permissions") or permissions,
        created=now,
        next_run=next_fire(trigger, now),
        timeout=job_timeout(job.get("timeout"), "agent" if "prompt" in job else "reminder"),
    )


def _same(stored: Job, wanted: Job) -> bool:
    def plan(trigger: Trigger) -> tuple[Any, ...]:
        return (trigger.kind, trigger.timezone, trigger.cron, trigger.every)  # an interval's start moves: ignore

    return plan(stored.trigger) == plan(wanted.trigger) and {**stored.spec(), "trigger": None} == {
        **wanted.spec(),
        "trigger": None,
    }


async def sync_jobs(
    store: JobStore,
    jobs: Mapping[str, Mapping[str, str]],
    *,
    timezone: str,
    permissions: str,
    now: datetime,
    redact: Callable[[str], str] = str,
) -> list[str]:
    """Make the store's ``config-*`` jobs match ``jobs``; the ids added or replaced (texts masked by ``redact``)."""
    wanted = {
        f"{PREFIX}{name}": declared_job(name, job, timezone=timezone, permissions=permissions, now=now, redact=redact)
        for name, job in jobs.items()
    }
    changed = []
    for old in await store.list(include_finished=True):
        if old.id.startswith(PREFIX) and old.id not in wanted:
            await store.remove(old.id)
    for job_id, job in wanted.items():
        stored = await store.get(job_id)
        if stored is not None and _same(stored, job):
            continue
        if stored is not None:
            await store.remove(job_id)
        try:
            await store.add(job)
        except crab.StoreError:
            if await store.get(job_id) is None:  # not another crab serve adding it at the same moment
                raise
        changed.append(job_id)
    return changed
