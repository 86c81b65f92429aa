"""The scheduler channel ``schedule`` that ``crab serve`` runs: claims due jobs and runs them.

Each poll it asks the store for due jobs and claims as many as it has room for (``max_running``;
a lease under this worker's id, so no other ``crab serve`` runs them too). It runs each and
finishes it with its next run, computed after now: missed runs are coalesced into one, and a run
later than ``catch_up`` is skipped and logged. A reminder delivers its text; an agent job runs
one turn (``turn.py``: its session, permissions, timeout and failed tool calls) and delivers the
answer. Every outcome, failures first, goes to where the job came from and into the schedule
log. ``stop()`` (SIGTERM) takes no new jobs and returns once the running ones are done; a run
cancelled after ``[serve] grace_seconds`` is logged as interrupted and released, still due.

Under a ``[serve] engine`` that offers to fire jobs (``crab_schedule.engines``: crab-temporal's
Temporal Schedules), each poll only syncs the store's jobs to the engine, and the engine hands
each fire back to ``fire``, which claims the job under a holder keyed by the fire's time and runs
it with the same ``run_job``: a second attempt of a fire whose first died finds its claim and
records it as interrupted instead of running it again.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
from datetime import datetime
from typing import Any

import crab

from crab_schedule.clock import Clock, SystemClock
from crab_schedule.engines import JobEngine
from crab_schedule.jobs import Job, JobStore, RunRecord, Status
from crab_schedule.settings import ScheduleSettings
from crab_schedule.timing import format_time, next_fire
from crab_schedule.turn import TurnResult, run_turn

_CLAIM_SLACK = 10  # due rows read beyond this worker's free room, for the claims other workers win
SETTLE_SECONDS = 5.0  # how long cancelled runs get to record themselves before the store closes


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def describe_failure(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, crab.CrabError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Scheduler:
    """The ``schedule`` channel (remote: agent jobs never run ``!shell``)."""

    name = "schedule"
    local = False

    def __init__(
        self,
        settings: ScheduleSettings,
        store: JobStore | None = None,
        clock: Clock | None = None,
        worker: str | None = None,
        permissions: str = "ask",
    ) -> None:
        self.settings = settings
        self.permissions = permissions  # [crab] permissions: declared jobs that name none get these
        self._store = store
        self.clock: Clock = clock or SystemClock()
        self.worker = worker or worker_id()
        self.running: dict[str, asyncio.Task[None]] = {}
        self._stopping: asyncio.Event | None = None  # made in run(), inside the loop that waits on it
        self._wake: asyncio.Event | None = None  # set when a run ends: there is room to claim another
        self._redactor: crab.secrets.Redactor | None = None
        self._agent: crab.AgentHandle | None = None

    @property
    def store(self) -> JobStore:
        if self._store is None:
            from crab_schedule.settings import open_store

            agent = self._agent
            self._store = open_store(self.settings, (lambda: agent.collect("crab_job_stores")) if agent else None)
        return self._store

    # --- the channel ---------------------------------------------------------------------------

    async def run(self, agent: crab.AgentHandle) -> None:
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._agent = agent
        self._redactor = crab.secrets.Redactor(crab.secrets.known_secrets(agent.config))
        try:
            from crab_schedule.config_jobs import sync_jobs

            # Also when none are declared: a job the user deleted from the config goes away.
            await sync_jobs(
                self.store,
                self.settings.jobs,
                timezone=self.settings.timezone,
                permissions=self.permissions,
                now=self.clock.now(),
                redact=self._redact,
            )
            from crab_schedule.engines import job_engine

            engine = job_engine(agent, self)
            if engine is None:
                await self._every_poll(agent, lambda: self.poll(agent), crab.StoreError, "the job store")
            else:
                await self._on_engine(agent, engine)
            if self.running:
                await asyncio.gather(*self.running.values(), return_exceptions=True)
        finally:
            # Cancelled (crab serve's grace period is over): each run records itself as interrupted
            # and releases its claim, which needs the store still open.
            left = list(self.running.values())
            for task in left:
                task.cancel()
            if left:
                await asyncio.wait(left, timeout=SETTLE_SECONDS)
            await self.store.close()

    async def _every_poll(self, agent: crab.AgentHandle, work: Any, errors: Any, what: str) -> None:
        """``work()`` every poll until stopped; ``errors`` (the store, the engine away) said once, not every poll."""
        assert self._stopping is not None
        failing = False
        while not self._stopping.is_set():
            try:
                await work()
            except errors as exc:
                # It may come back: keep polling, and say so once.
                if not failing:
                    agent.notice(f"schedule: {exc}; trying again every poll", "warning")
                failing = True
            else:
                if failing:
                    agent.notice(f"schedule: {what} answers again")
                failing = False
            await self._pause()

    async def _on_engine(self, agent: crab.AgentHandle, engine: JobEngine) -> None:
        """Jobs fired by the engine's clock: each poll syncs the store's active jobs to it (a job
        added, changed or removed by ``crab schedule`` or a tool reaches it within a poll)."""
        await engine.start()  # ConfigError when it cannot be reached: this channel ends, one line

        async def sync() -> None:
            await engine.sync(await self.store.list())

        try:
            await self._every_poll(agent, sync, crab.CrabError, "the job engine")
        finally:
            await engine.close()

    # --- fires handed back by a job engine (crab_schedule.engines.JobFiring) --------------------

    @property
    def catch_up(self) -> float:
        return self.settings.catch_up.total_seconds()

    @property
    def max_running(self) -> int:
        return self.settings.max_running

    async def fire(self, job_id: str, scheduled: datetime, attempt: int = 1) -> str:
        """Run the engine's fire ``scheduled`` of ``job_id`` here (``JobFiring.fire``).

        The claim's holder carries the fire's time: the engine never runs two fires of a job at
        once, so a claim found here is a dead earlier attempt's (its ``crab serve`` was killed).
        It is logged as interrupted and released; when it was this very fire's, the fire ends
        there, so an agent job never runs twice.
        """
        agent = self._agent
        assert agent is not None, "fire() runs inside run()"
        now = self.clock.now()
        job = await self.store.get(job_id)
        if job is None or job.next_run is None:
            return "gone"  # removed, or it will not run again: the next sync drops its schedule
        key = f"@{format_time(scheduled)}"
        if job.claimed_by is None and job.last_run is not None and job.last_run >= scheduled:
            return "gone"  # this fire ran to its end already (its answer to the engine was lost)
        if job.claimed_by is not None:
            mine = job.claimed_by.endswith(key)  # this fire's own first attempt, else an earlier fire's
            again = next_fire(job.trigger, now) if mine else job.next_run
            await self._interrupted(job, now, job.next_run, holder=job.claimed_by, again=again)
            if mine:
                return "interrupted"
            job = await self.store.get(job_id)  # released, still due: this fire runs it
        due = job.next_run if job is not None else None
        if job is None or due is None:
            return "gone"
        if due > now:
            # The engine's time for it may round the store's own (whole seconds): due now.
            await self.store.set_next_run(job.id, now)
        holder = f"{self.worker}{key}"
        claimed = await self.store.claim(job.id, holder, now, self.settings.lease)
        if claimed is None:
            return "gone"  # a crab serve firing by its own poll took it
        # Lateness counts from when the store had it due (as without an engine), not from the fire.
        claimed = claimed.with_run(next_run=due)
        keeper = asyncio.ensure_future(self._keep_lease(job.id, holder))
        try:
            return await self.run_job(agent, claimed, now, holder=holder, engine=True)
        finally:
            keeper.cancel()

    async def problem(self, job: Job, text: str) -> None:
        """A job the engine cannot schedule: one line in the schedule log, and a notice."""
        if self._agent is not None:
            self._agent.notice(f"schedule: job {job.id}: {text}", "warning")
        await self._record(job, "error", "log", "", text)

    async def stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()

    async def _pause(self) -> None:
        assert self._stopping is not None
        assert self._wake is not None
        waits = {
            asyncio.ensure_future(self.clock.sleep(self.settings.poll_interval)),
            asyncio.ensure_future(self._stopping.wait()),
            asyncio.ensure_future(self._wake.wait()),
        }
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()

    # --- one poll --------------------------------------------------------------------------------

    async def poll(self, agent: crab.AgentHandle) -> list[str]:
        """Claim and start as many due jobs as this worker has room for (``max_running``); the ids started.

        A worker claims only what it can start now: a job claimed and left waiting behind this
        worker's other runs is one no other worker may run, so more workers would add nothing.
        """
        if self._wake is not None:
            self._wake.clear()
        now = self.clock.now()
        started: list[str] = []
        free = self.settings.max_running - len(self.running)
        if free <= 0 or (self._stopping is not None and self._stopping.is_set()):
            return started
        claim_due = getattr(self.store, "claim_due", None)
        if claim_due is not None:  # a queue's batch claim: workers take different jobs, none waits
            batch: list[Job] = await claim_due(self.worker, now, self.settings.lease, free)
        else:
            batch = []
            # More than ``free``: workers polling together race for the first rows, and a claim
            # another worker won is skipped for the next one.
            for job in await self.store.due(now, limit=free + _CLAIM_SLACK):
                if len(batch) >= free or (self._stopping is not None and self._stopping.is_set()):
                    break
                if job.id in self.running:
                    continue
                claimed = await self.store.claim(job.id, self.worker, now, self.settings.lease)
                if claimed is not None:  # else another worker took it first
                    batch.append(claimed)
        for claimed in batch:
            task = asyncio.ensure_future(self._run_claimed(agent, claimed, now))
            self.running[claimed.id] = task
            task.add_done_callback(self._forget(claimed.id))
            started.append(claimed.id)
        return started

    def _forget(self, job_id: str) -> Any:
        def done(_task: asyncio.Task[None]) -> None:
            self.running.pop(job_id, None)
            if self._wake is not None:
                self._wake.set()  # room for another job: look now, not a poll_interval later

        return done

    async def _run_claimed(self, agent: crab.AgentHandle, job: Job, now: datetime) -> None:
        keeper = asyncio.ensure_future(self._keep_lease(job.id, self.worker))
        try:
            await self.run_job(agent, job, now)
        except Exception as exc:  # our own failure (the store): say so, the lease brings the job back
            agent.notice(f"schedule: job {job.id} could not finish: {describe_failure(exc)}", "warning")
        finally:
            keeper.cancel()

    async def _keep_lease(self, job_id: str, holder: str) -> None:
        period = max(self.settings.lease.total_seconds() / 3, 0.05)
        while True:
            await self.clock.sleep(period)
            try:
                await self.store.extend(job_id, holder, self.clock.now() + self.settings.lease)
            except crab.StoreError:
                continue

    async def run_job(
        self, agent: crab.AgentHandle, job: Job, now: datetime, *, holder: str | None = None, engine: bool = False
    ) -> Status:
        """Run one claimed job to its end: execute, deliver, record, finish. Returns its status.

        ``holder``: the claim's holder (default this worker). ``engine``: a job engine fired it, so
        a run cut short is released to its next fire, not left due (the engine decides when it
        runs again; a second attempt of this fire never runs it twice)."""
        holder = holder or self.worker
        scheduled = job.next_run or now
        upcoming = next_fire(job.trigger, now)
        late = now - scheduled
        if late > self.settings.catch_up:
            text = (
                f"Skipped scheduled job {job.id} ({self._label(job)}): it was due at {format_time(scheduled)}, "
                f"more than {int(self.settings.catch_up.total_seconds())}s ago ([plugins.schedule] catch_up)"
            )
            status: Status = await self._deliver(agent, job, text, "missed", None)
            await self.store.finish(job.id, holder, ran_at=now, status="missed", error=None, next_run=upcoming)
            return status
        finished = False
        try:
            result = await self._execute(agent, job)
            if result.aborted and self._stopping is not None and self._stopping.is_set():
                finished = True  # crab serve is stopping and aborted the turn
                await self._interrupted(job, now, scheduled, holder=holder, again=upcoming if engine else scheduled)
                return "error"
            error = "; ".join(part for part in (result.error, result.tool_failures) if part) or None
            if result.error is not None:
                text = f"Scheduled job {job.id} ({self._label(job)}) failed: {error}"
                if result.timed_out and job.origin.destination != "log":  # _deliver warns for the log
                    agent.notice(f"schedule: {text}", "warning")
            else:
                text = result.text  # answered; failed tool calls, if any, go into the log line
            status = await self._deliver(agent, job, text, "error" if result.error else "ok", error)
            await self.store.finish(
                job.id,
                holder,
                ran_at=now,
                status="error" if result.error else status,
                error=self._redact(error) if error else None,
                next_run=upcoming,
            )
            finished = True
            return status
        except asyncio.CancelledError:
            # crab serve's grace period ran out and it cancelled the run: without this the claim
            # would stay until its lease ran out and nothing would say the run happened.
            if not finished:
                await self._interrupted(job, now, scheduled, holder=holder, again=upcoming if engine else scheduled)
            raise

    async def _execute(self, agent: crab.AgentHandle, job: Job) -> TurnResult:
        """A reminder's text, or the agent job's turn; an exception is the job's error, not ours."""
        if job.mode == "reminder":
            return TurnResult(text=f"Reminder: {job.text}")
        try:
            return await run_turn(agent, job, default_timeout=self.settings.job_timeout)
        except Exception as exc:  # the job failed, not crab serve: report it where it came from
            return TurnResult(error=describe_failure(exc))

    async def _interrupted(
        self, job: Job, now: datetime, scheduled: datetime, *, holder: str, again: datetime | None
    ) -> None:
        """Log a run that crab serve's stop cut short and release the job's claim (``holder``'s),
        due again at ``again``: ``scheduled`` (the next start runs it), or under a job engine its
        next fire."""
        await self._record(job, "error", "log", "", "interrupted: crab serve stopped during the run")
        await self.store.finish(
            job.id, holder, ran_at=now, status="error", error="interrupted by shutdown", next_run=again
        )

    @staticmethod
    def _label(job: Job) -> str:
        return job.name or job.trigger.describe()

    async def _deliver(self, agent: crab.AgentHandle, job: Job, text: str, status: Status, error: str | None) -> Status:
        """Send ``text`` where the job came from and log it; a delivery that fails is logged too."""
        origin = job.origin
        destination = origin.destination
        if origin.channel and origin.address is not None:
            try:
                await agent.deliver(origin.channel, origin.address, text)
            except crab.ChannelError as exc:
                agent.notice(f"schedule: job {job.id}: {exc}", "warning")
                await self._record(job, "undelivered", destination, text, f"{error + '; ' if error else ''}{exc}")
                return "undelivered"
        elif status == "error":
            agent.notice(f"schedule: {text}", "warning")
        await self._record(job, status, destination, text, error)
        return status

    def _redact(self, text: str) -> str:
        return self._redactor.text(text) if self._redactor is not None else text

    async def _record(self, job: Job, status: Status, destination: str, text: str, error: str | None) -> None:
        redact = self._redact
        await self.store.record(
            RunRecord(
                job_id=job.id,
                time=self.clock.now(),
                status=status,
                destination=destination,
                text=redact(text),
                error=redact(error) if error else None,
                worker=self.worker,
            )
        )


def build(config: crab.Config, **overrides: Any) -> Scheduler:
    from crab_schedule.settings import settings_of

    overrides.setdefault("permissions", str(config.get("crab.permissions") or "ask"))
    return Scheduler(settings_of(config), **overrides)
