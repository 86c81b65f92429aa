"""crab-schedule's job fires as a small Temporal workflow, ``crab-job``: a job's Temporal Schedule
(``crab_temporal.jobs``) starts it with the job's id and nothing else (no prompt, no secret), and
it runs one activity, ``crab.fire_job``, on the serving task queue (``<task_queue>-jobs``) that
every ``crab serve`` with the ``schedule`` channel polls: the job runs there as crab-schedule's
own poll would run it, keyed by the schedule's time for this fire.

Workflow code is replayed: change what it asks for only in ways a running fire can replay."""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey

JOB_WORKFLOW = "crab-job"
FIRE = "crab.fire_job"
HEARTBEAT = "crab-heartbeat"
"""The action's memo key: seconds between the fire activity's heartbeats ([plugins.temporal] heartbeat)."""
SCHEDULED = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")
"""Set by Temporal on each workflow a schedule starts: the fire's time (its key in the job store)."""
LONGEST_FIRE = timedelta(days=30)
"""Bound on one fire's activity; the job's own timeout (crab-schedule's ``job_timeout``) ends its turn first."""
RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30), maximum_attempts=10)
"""A fire whose ``crab serve`` died (heartbeats stop) or whose store was away is tried again, on any
serving process: a retry that finds the dead attempt's claim records it as interrupted, never runs it twice."""


@workflow.defn(name=JOB_WORKFLOW)
class JobWorkflow:
    """One fire of one job: ``run``'s argument is the job's id; returns how the fire ended (``ok``,
    ``error``, ``missed``, ``undelivered``, ``interrupted`` or ``gone``)."""

    @workflow.run
    async def run(self, job_id: str) -> str:
        info = workflow.info()
        scheduled: datetime = info.typed_search_attributes.get(SCHEDULED) or info.start_time
        heartbeat = float(workflow.memo_value(HEARTBEAT, 10.0))
        result: str = await workflow.execute_activity(
            FIRE,
            args=[job_id, scheduled.isoformat()],
            start_to_close_timeout=LONGEST_FIRE,
            heartbeat_timeout=timedelta(seconds=max(3 * heartbeat, 1.0)),
            retry_policy=RETRY,
        )
        return result
