"""``crab schedule add|list|remove|run-now|log``: the user's own word on the job store.

Each function takes the checked settings and prints; bad input raises ``crab.UsageError`` (one
line, exit 2) before anything is stored. A job store that cannot be reached (a database that is
down) is a setup error, ``crab.ConfigError`` (one line, exit 2), as it is for ``crab run``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import crab

from crab_schedule.adding import PERMISSION_MODES, add_job, describe_job, job_json, local_time
from crab_schedule.clock import SystemClock
from crab_schedule.jobs import JobStore, Origin
from crab_schedule.settings import NAME, TABLE, ScheduleSettings, open_store, read_settings

T = TypeVar("T")


def load_settings(config: crab.Config) -> ScheduleSettings:
    """``[plugins.schedule]`` checked as a run would check it (an untrusted project's trust-only keys dropped)."""
    config.resolve([TABLE])
    for line in config.notices():
        sys.stderr.write(f"warning: {line}\n")
    return read_settings(config.plugin_settings(NAME))


def with_store(settings: ScheduleSettings, work: Callable[[JobStore], Awaitable[T]]) -> T:
    """Run ``work`` on the configured job store, closed afterwards; one that cannot be reached exits 2."""
    store = open_store(settings)

    async def go() -> T:
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return asyncio.run(go())
    except crab.StoreError as exc:
        raise crab.ConfigError(f"{exc} (the job store: [plugins.schedule] store and path)") from None


def _destination(to: str | None) -> tuple[str | None, str | None]:
    if not to:
        return None, None
    channel, sep, address = to.partition(":")
    if not sep or not channel or not address:
        raise crab.UsageError(f"invalid --to {to!r}: write CHANNEL:ADDRESS, e.g. telegram:123456")
    return channel, address


def add(config: crab.Config, options: dict[str, Any]) -> int:
    settings = load_settings(config)
    message, prompt = options.get("message"), options.get("prompt")
    if bool(message) == bool(prompt):
        raise crab.UsageError("give exactly one of --message (a reminder) or --prompt (an agent job)")
    channel, address = _destination(options.get("to"))
    permissions = options.get("permissions") or str(config.get("crab.permissions") or "ask")
    if permissions not in PERMISSION_MODES:
        raise crab.UsageError(f"invalid --permissions {permissions!r}: use one of {', '.join(PERMISSION_MODES)}")
    job = with_store(
        settings,
        lambda store: add_job(
            store,
            settings,
            now=SystemClock().now(),
            mode="reminder" if message else "agent",
            text=message or prompt or "",
            origin=Origin("cli", None, channel, address, None),
            permissions=permissions,
            cron=options.get("cron"),
            timezone=options.get("timezone"),
            every=options.get("every"),
            at=options.get("at"),
            after=options.get("after"),
            name=options.get("name") or "",
            timeout=options.get("timeout"),
            redact=crab.secrets.Redactor(crab.secrets.known_secrets(config)).text,
        ),
    )
    assert job.next_run is not None
    print(f"added {job.id}: {job.mode} {job.trigger.describe()} → {job.origin.destination}")
    print(f"next run {local_time(job.next_run, job.trigger.timezone)}; `crab serve schedule` runs it")
    return 0


def list_jobs(config: crab.Config, include_finished: bool, as_json: bool) -> int:
    jobs = with_store(load_settings(config), lambda store: store.list(include_finished))
    now = SystemClock().now()
    if as_json:
        print(json.dumps([job_json(job, now) for job in jobs], ensure_ascii=False, indent=2))
    elif not jobs:
        print("no scheduled jobs (`crab schedule add --help` says how to add one)")
    else:
        for job in jobs:
            print(describe_job(job, now))
    return 0


def remove(config: crab.Config, job_ids: list[str]) -> int:
    async def go(store: JobStore) -> list[str]:
        return [job_id for job_id in job_ids if not await store.remove(job_id)]

    missing = with_store(load_settings(config), go)
    for job_id in job_ids:
        if job_id not in missing:
            print(f"removed {job_id}")
    if missing:
        raise crab.UsageError(f"no job {', '.join(missing)} (`crab schedule list --all` shows every job)")
    return 0


def run_now(config: crab.Config, job_id: str) -> int:
    found = with_store(load_settings(config), lambda store: store.set_next_run(job_id, SystemClock().now()))
    if not found:
        raise crab.UsageError(f"no job {job_id} (`crab schedule list --all` shows every job)")
    print(f"{job_id} is due now: a running `crab serve schedule` runs it within its poll interval")
    return 0


def log(config: crab.Config, job_id: str | None, limit: int, as_json: bool) -> int:
    records = with_store(load_settings(config), lambda store: store.records(job_id, limit))
    if as_json:
        print(json.dumps([record.to_dict() for record in records], ensure_ascii=False, indent=2))
        return 0
    if not records:
        print("the schedule log is empty")
        return 0
    for record in records:
        when = record.time.strftime("%Y-%m-%d %H:%M:%S UTC")
        error = f" ({record.error})" if record.error and record.error not in record.text else ""
        sys.stdout.write(f"{when} {record.job_id} {record.status} → {record.destination}: {record.text}{error}\n")
    return 0
