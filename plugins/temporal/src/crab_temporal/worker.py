"""``crab worker``: a Temporal worker that runs turns' workflows and their steps with one crab agent
(this folder's config, plugins, tools and store), within ``[plugins.temporal]``'s bounds, until
Ctrl-C or SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from datetime import timedelta
from typing import Any

import crab

from crab_temporal.activities import StepActivities
from crab_temporal.client import check_namespace, connect
from crab_temporal.settings import TemporalSettings
from crab_temporal.workflow import TurnWorkflow, sandbox

READY = "crab worker: running turns from task queue {queue} at {address} (namespace {namespace})"
"""The line a started worker writes to stderr (tests and scripts wait for it)."""


def make_worker(client: Any, agent: crab.Agent, settings: TemporalSettings) -> Any:
    """A ``temporalio.worker.Worker`` for ``agent``, polling no more than it may run at once."""
    from temporalio.worker import Worker

    activities = StepActivities(agent, settings.heartbeat)
    return Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[TurnWorkflow],
        workflow_runner=sandbox(),
        activities=activities.all(),
        graceful_shutdown_timeout=timedelta(seconds=5),
        **bounds(settings),
    )


def bounds(settings: TemporalSettings) -> dict[str, Any]:
    """What one worker runs and polls for at once."""
    return {
        "max_concurrent_activities": settings.max_concurrent_activities,
        # Local steps (crab_temporal.placement) get as many slots of their own: a slot shared with
        # regular activities is reserved by a poll before a task arrives, so a turn's quick local
        # step would wait behind an idle poll.
        "max_concurrent_local_activities": settings.max_concurrent_activities,
        "max_concurrent_activity_task_polls": min(5, settings.max_concurrent_activities),
        "max_concurrent_workflow_tasks": max(2, settings.max_concurrent_turns),
        "max_concurrent_workflow_task_polls": min(5, max(2, settings.max_concurrent_turns)),
    }


async def serve(agent: crab.Agent, settings: TemporalSettings) -> None:
    """Run a worker until a signal stops it."""
    async with agent:
        client = await connect(settings)
        await check_namespace(client, settings)
        worker = make_worker(client, agent, settings)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with worker:
            print(
                READY.format(queue=settings.task_queue, address=settings.address, namespace=settings.namespace),
                file=sys.stderr,
                flush=True,
            )
            await stop.wait()
