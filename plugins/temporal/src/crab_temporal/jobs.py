"""crab-schedule's jobs as Temporal Schedules (``[serve] engine = "temporal"``, crab-schedule's
``crab_job_engines`` hook): each job in the job store gets a schedule ``crab-job-<job id>`` in the
configured namespace, its spec from the job's trigger (cron in its timezone, every N, once at T),
overlap SKIP (a job never runs twice at once) and the catch-up window of ``[plugins.schedule]
catch_up``. Its action starts ``crab-job`` (``crab_temporal.job_workflow``) with the job's id;
the fire runs on ``<task_queue>-jobs``, polled by a worker inside each ``crab serve`` that runs the
``schedule`` channel (``TemporalJobs.fire``, which hands it back to crab-schedule).

The job store stays the truth: ``crab schedule add``/``remove`` and the tools write only the
store, and each poll of ``crab serve`` syncs it here (``TemporalJobs.sync``): missing schedules
are created, changed ones made anew, and crab's own schedules of this task queue whose job is
gone (removed, or a once job that ran) deleted. Schedules that are not crab's, or another task
queue's, are never touched: only ids starting ``crab-job-`` whose memo names this queue are ours.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import crab
from temporalio import activity

from crab_temporal.job_workflow import FIRE, HEARTBEAT, JOB_WORKFLOW
from crab_temporal.settings import TemporalSettings

PREFIX = "crab-job-"
QUEUE_MEMO = "crab-queue"
SPEC_MEMO = "crab-spec"
MIN_CATCH_UP = 10.0
"""Seconds: Temporal's shortest catch-up window. crab-schedule checks the job's own (``catch_up``)
when the fire runs, and logs a later one as missed, as without the engine."""
OVERDUE = 5.0
"""Seconds past a job's due time in the store, with no fire of its schedule since, after which
the sync fires it now: ``crab schedule run-now``, or a once job created in the very second it was due."""


class Inexpressible(Exception):
    """A trigger no Temporal schedule spec says."""


def schedule_id(job_id: str) -> str:
    return f"{PREFIX}{job_id}"


def jobs_queue(settings: TemporalSettings) -> str:
    """The task queue the fires run on: ``crab serve`` polls it, ``crab worker`` does not."""
    return f"{settings.task_queue}-jobs"


def _whole_second(when: datetime) -> datetime:
    """``when`` rounded up to a whole second (Temporal's schedules keep seconds)."""
    rounded = when.astimezone(UTC).replace(microsecond=0)
    return rounded if rounded == when else rounded + timedelta(seconds=1)


def spec_of(trigger: Any) -> Any:
    """The ``ScheduleSpec`` of a ``crab_jobs_kit.Trigger``; ``Inexpressible`` when none fits."""
    from temporalio.client import ScheduleCalendarSpec, ScheduleIntervalSpec, ScheduleRange, ScheduleSpec

    if trigger.kind == "cron":
        return ScheduleSpec(cron_expressions=[str(trigger.cron)], time_zone_name=trigger.timezone)
    if trigger.start is None:
        raise Inexpressible(f"a {trigger.kind} trigger without a start time")
    start = _whole_second(trigger.start)
    if trigger.kind == "every":
        every = float(trigger.every or 0)
        if every < 1 or every != int(every):
            raise Inexpressible(f"every {every:g}s: Temporal schedules whole seconds only")
        # Matches epoch + n * every + offset: the same instants as the job's start + n * every.
        offset = timedelta(seconds=int(start.timestamp()) % int(every))
        interval = ScheduleIntervalSpec(every=timedelta(seconds=int(every)), offset=offset)
        return ScheduleSpec(intervals=[interval], start_at=start)
    at = [
        ScheduleRange(value) for value in (start.second, start.minute, start.hour, start.day, start.month, start.year)
    ]
    calendar = ScheduleCalendarSpec(
        second=at[:1], minute=at[1:2], hour=at[2:3], day_of_month=at[3:4], month=at[4:5], year=at[5:]
    )
    return ScheduleSpec(calendars=[calendar], time_zone_name="UTC")


def fingerprint(trigger: Any, catch_up: float, heartbeat: float, queue: str) -> str:
    """What a schedule was made from (its memo): a changed one is made anew. No prompt, no secret."""
    made = {"trigger": trigger.to_dict(), "catch_up": catch_up, "heartbeat": heartbeat, "queue": queue, "v": 1}
    return hashlib.sha256(json.dumps(made, sort_keys=True).encode()).hexdigest()[:16]


class TemporalJobs:
    """crab-schedule's ``JobEngine`` on Temporal, for one ``crab serve``'s scheduler (``firing``)."""

    def __init__(self, config: crab.Config, firing: Any) -> None:
        self.settings = TemporalSettings.from_config(config)
        self.queue = jobs_queue(self.settings)
        self.firing = firing
        self.grace = float(config.get("serve.grace_seconds", 30.0))
        self.client: Any = None
        self.worker: Any = None
        self.running: asyncio.Task[None] | None = None
        self.reported: set[tuple[str, str]] = set()

    # --- JobEngine -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (``Unreachable``, a ``ConfigError``: one line, the channel ends) and poll the fires' queue."""
        from crab_temporal.client import check_namespace
        from crab_temporal.serve import shared_client

        self.client = await shared_client(self.settings)
        await check_namespace(self.client, self.settings)
        self._run_worker()

    def _run_worker(self) -> None:
        from temporalio.worker import Worker

        from crab_temporal.job_workflow import JobWorkflow
        from crab_temporal.workflow import sandbox

        self.worker = Worker(
            self.client,
            task_queue=self.queue,
            workflows=[JobWorkflow],
            workflow_runner=sandbox(),
            activities=[self.fire],
            max_concurrent_activities=max(1, int(self.firing.max_running)),
            graceful_shutdown_timeout=timedelta(seconds=self.grace),
        )
        self.running = asyncio.ensure_future(self.worker.run())

    async def sync(self, jobs: list[Any]) -> None:
        from temporalio.service import RPCError

        if self.running is not None and self.running.done():
            # The worker ended (Temporal was away too long): a new one, and say why once.
            failure = None if self.running.cancelled() else self.running.exception()
            self._run_worker()
            if failure is not None:
                raise crab.CrabError(f"the job worker stopped ({failure}); started a new one")
        now = datetime.now(UTC)
        try:
            ours = await self._ours()
            wanted = {schedule_id(job.id): job for job in jobs if job.next_run is not None}
            for sid, job in wanted.items():
                await self._one(sid, job, ours.get(sid), now)
            for sid in ours.keys() - wanted.keys():
                await self._delete(sid)
        except RPCError as exc:
            raise crab.CrabError(
                f"Temporal at {self.settings.address} failed: {' '.join(str(exc).split())[:200]}"
            ) from None

    async def close(self) -> None:
        if self.worker is not None:
            try:
                await self.worker.shutdown()
            except Exception:  # a worker that never started (Temporal went away): nothing to stop
                pass
        if self.running is not None:
            await asyncio.gather(self.running, return_exceptions=True)

    # --- the fires -------------------------------------------------------------------------------

    @activity.defn(name=FIRE)
    async def fire(self, job_id: str, scheduled: str) -> str:
        """The ``crab.fire_job`` activity: crab-schedule runs the fire here, heartbeating meanwhile."""
        attempt = activity.info().attempt
        beating = asyncio.ensure_future(self._beat())
        try:
            result: str = await self.firing.fire(job_id, datetime.fromisoformat(scheduled), attempt)
            return result
        finally:
            beating.cancel()

    async def _beat(self) -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(self.settings.heartbeat)

    # --- the schedules ---------------------------------------------------------------------------

    async def _ours(self) -> dict[str, str]:
        """crab's schedules of this queue: id → fingerprint (listing is eventually consistent:
        a create that finds one already there is fine)."""
        found: dict[str, str] = {}
        async for listed in await self.client.list_schedules():
            if not listed.id.startswith(PREFIX):
                continue
            memo = await listed.memo()
            if memo.get(QUEUE_MEMO) == self.queue:
                found[listed.id] = str(memo.get(SPEC_MEMO) or "")
        return found

    def _schedule(self, job: Any) -> tuple[Any, str]:
        from temporalio.client import (
            Schedule,
            ScheduleActionStartWorkflow,
            ScheduleOverlapPolicy,
            SchedulePolicy,
        )

        catch_up = max(float(self.firing.catch_up), MIN_CATCH_UP)
        schedule = Schedule(
            action=ScheduleActionStartWorkflow(
                JOB_WORKFLOW,
                job.id,  # the job's id and nothing else: the prompt stays in the job store
                id=schedule_id(job.id),
                task_queue=self.queue,
                memo={HEARTBEAT: self.settings.heartbeat},
            ),
            spec=spec_of(job.trigger),
            policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP, catchup_window=timedelta(seconds=catch_up)),
        )
        return schedule, fingerprint(job.trigger, catch_up, self.settings.heartbeat, self.queue)

    async def _one(self, sid: str, job: Any, found: str | None, now: datetime) -> None:
        from temporalio.client import ScheduleAlreadyRunningError
        from temporalio.service import RPCError, RPCStatusCode

        try:
            schedule, made = self._schedule(job)
        except Inexpressible as exc:
            await self._report(job, "", str(exc))
            return
        if found is not None and found != made:
            await self._delete(sid)  # changed (a declared job's new trigger): made anew (a memo is fixed)
            found = None
        if found is None:
            try:
                await self.client.create_schedule(
                    sid,
                    schedule,
                    memo={QUEUE_MEMO: self.queue, SPEC_MEMO: made},
                    # a once job already due (added while no crab serve ran): its time has passed
                    trigger_immediately=job.trigger.kind == "once" and job.next_run <= now,
                )
            except ScheduleAlreadyRunningError:
                pass  # another crab serve made it, or the listing had not shown it yet
            except RPCError as exc:
                if exc.status != RPCStatusCode.INVALID_ARGUMENT:
                    raise
                await self._report(job, made, " ".join(str(exc).split())[:200])
            return
        if job.next_run <= now - timedelta(seconds=OVERDUE) and job.claimed_by is None:
            await self._overdue(sid, job)

    async def _overdue(self, sid: str, job: Any) -> None:
        """Fire now a job due in the store that its schedule has not fired since (``run-now``)."""
        handle = self.client.get_schedule_handle(sid)
        described = await handle.describe()
        info = described.info
        recent = [action.scheduled_at for action in info.recent_actions]
        if info.running_actions or any(at >= job.next_run - timedelta(seconds=1) for at in recent):
            return
        await handle.trigger()

    async def _delete(self, sid: str) -> None:
        from temporalio.service import RPCError, RPCStatusCode

        try:
            await self.client.get_schedule_handle(sid).delete()
        except RPCError as exc:
            if exc.status != RPCStatusCode.NOT_FOUND:
                raise

    async def _report(self, job: Any, made: str, reason: str) -> None:
        """A job Temporal cannot schedule: one line in the schedule log, once per trigger."""
        if (job.id, made) in self.reported:
            return
        self.reported.add((job.id, made))
        await self.firing.problem(
            job, f"cannot be scheduled on Temporal ({job.trigger.describe()}): {reason}; the other jobs run"
        )
