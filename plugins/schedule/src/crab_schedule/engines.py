"""Jobs fired by a turn engine's own clock (``[serve] engine``): what crab-schedule hands the
engine and what it expects back, and how the scheduler finds the engine a plugin offers through
crab-schedule's ``crab_job_engines`` hook (crab-temporal: ``temporal``, Temporal Schedules).

Under such an engine the scheduler fires nothing by its own poll: each poll hands the engine the
store's active jobs (``JobEngine.sync``), and the engine calls back ``JobFiring.fire`` when a job
is due, in this ``crab serve``, which runs it as its own poll would (``Scheduler.run_job``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

import crab

from crab_schedule.jobs import Job


class JobFiring(Protocol):
    """What crab-schedule offers the engine (the ``schedule`` channel of this ``crab serve``).

    - ``catch_up``: seconds a fire may be late and still run (``[plugins.schedule] catch_up``).
    - ``max_running``: most jobs this process runs at once.
    - ``fire(job_id, scheduled, attempt)``: run the job's fire ``scheduled`` (the engine's time
      for it, its key: a second ``attempt`` of the same fire never runs an agent job twice, it
      records the first as interrupted); returns ``ok``, ``error``, ``missed``, ``undelivered``,
      ``interrupted`` or ``gone`` (removed or finished: nothing ran).
    - ``problem(job, text)``: a job the engine cannot schedule, one line in the schedule log.
    """

    @property
    def catch_up(self) -> float: ...

    @property
    def max_running(self) -> int: ...

    async def fire(self, job_id: str, scheduled: datetime, attempt: int = 1) -> str: ...

    async def problem(self, job: Job, text: str) -> None: ...


class JobEngine(Protocol):
    """What an engine's ``make(config, firing)`` returns.

    - ``start()``: connect and begin taking fires (``crab.ConfigError``, one line, when the engine
      cannot be reached: ``crab serve`` then ends that channel, exit 2 when it is the only one).
    - ``sync(jobs)``: make the engine's schedules those of ``jobs`` (the store's active jobs):
      create the missing, update the changed, delete its own schedules of jobs not listed.
      ``crab.CrabError`` when the engine does not answer now (the next poll tries again).
    - ``close()``: stop taking fires; running ones end as ``Scheduler.run_job`` ends them.
    """

    async def start(self) -> None: ...

    async def sync(self, jobs: list[Job]) -> None: ...

    async def close(self) -> None: ...


def job_engine(agent: crab.AgentHandle, firing: JobFiring) -> JobEngine | None:
    """The job engine of ``[serve] engine``, or None: no engine, or one no plugin offers jobs for
    (its turns still run on it, ``crab_turn_ceilings``; the scheduler fires by its own poll)."""
    name = agent.config.get("serve.engine")
    if not name:
        return None
    for _plugin, offered in agent.collect("crab_job_engines"):
        make: Any = (offered or {}).get(str(name))
        if callable(make):
            engine: JobEngine = make(agent.config, firing)
            return engine
    return None
