"""A step's heartbeats cost Temporal's server one call each: a step shorter than the heartbeat
interval sends none (its heartbeat timeout counts from its start), a longer one beats every
interval, and a local step (no heartbeat timeout: its workflow task's timeout watches it) never."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from crab_temporal.activities import heartbeating
from temporalio import activity
from temporalio.testing import ActivityEnvironment

DEADLINE = 60.0


def beats_of(body: float, every: float, *, local: bool = False, until: int = 0) -> int:
    """The heartbeats sent while a step runs for ``body`` seconds (or until ``until`` were sent)."""
    sent: list[object] = []
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, is_local=local)
    env.on_heartbeat = lambda *details: sent.append(details)

    @activity.defn(name="step")
    async def step() -> None:
        async with heartbeating(every):
            end = time.monotonic() + (DEADLINE if until else body)
            while time.monotonic() < end and not (until and len(sent) >= until):
                await asyncio.sleep(0.01)

    asyncio.run(env.run(step))
    return len(sent)


def test_a_step_shorter_than_the_interval_sends_no_heartbeat():
    assert beats_of(0.05, every=30.0) == 0


def test_a_longer_step_beats_every_interval():
    assert beats_of(0, every=0.05, until=3) >= 3


def test_a_local_step_never_beats():
    assert beats_of(0.3, every=0.05, local=True) == 0
