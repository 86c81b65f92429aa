"""Jobs fired by a job engine (``[serve] engine`` with a plugin's ``crab_job_engines``): the
scheduler fires nothing by its own poll, hands the engine the store's jobs each poll, and runs
each fire the engine hands back, once: a second attempt of a fire whose first died is logged as
interrupted, never run again. The engine here is a stand-in that fires what it is told to."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

import crab
from crab_schedule.adding import add_job
from crab_schedule.jobs import Origin
from crab_schedule.runner import Scheduler
from crab_schedule.sqlite_store import SQLiteJobStore
from crab_schedule.timing import format_time

ENGINE = crab.Config({"serve": {"engine": "clockwork"}}, crab.config.crab_home() / "config.toml", None)


class Clockwork:
    """A job engine: records each sync; fires ``fires`` (job id, time, attempt) at its first sync,
    then stops the scheduler at its third."""

    def __init__(self, firing: Any, fires: list[tuple[str, datetime, int]]) -> None:
        self.firing, self.fires = firing, fires
        self.synced: list[list[str]] = []
        self.results: list[str] = []
        self.started = self.closed = False

    async def start(self) -> None:
        self.started = True

    async def sync(self, jobs: list[Any]) -> None:
        self.synced.append([job.id for job in jobs])
        if len(self.synced) == 1:
            for job_id, scheduled, attempt in self.fires:
                self.results.append(await self.firing.fire(job_id, scheduled, attempt))
        if len(self.synced) == 3:
            await self.firing.stop()

    async def close(self) -> None:
        self.closed = True


def run(tmp_path, fakes, fires_of, *, before=None):
    """A scheduler on a real SQLite store under the engine; ``fires_of(job)`` the fires to hand back."""
    clock = fakes.FakeClock()
    conf = fakes.settings(tmp_path / "schedule.db")
    store = SQLiteJobStore(conf.path)
    job = asyncio.run(
        add_job(
            store, conf, now=clock.now(), mode="agent", text="go", origin=Origin("cli"), permissions="ask", after="1m"
        )
    )
    clock.advance(minutes=1)
    if before is not None:
        asyncio.run(before(store, job, clock))
    scheduler = Scheduler(conf, store=store, clock=clock, worker="w1")
    engines: list[Clockwork] = []

    def make(config: Any, firing: Any) -> Clockwork:
        engines.append(Clockwork(firing, fires_of(job)))
        return engines[0]

    handle = fakes.FakeHandle(config=ENGINE, offered={"crab_job_engines": [{"clockwork": make}]})
    # The engine stops it at its third sync; a scheduler that never syncs fails here, not hangs.
    asyncio.run(asyncio.wait_for(scheduler.run(handle), 30))
    [engine] = engines
    return job, store, handle, engine


def test_under_a_job_engine_the_poll_fires_nothing_and_syncs_the_store(tmp_path, fakes):
    job, store, handle, engine = run(tmp_path, fakes, lambda job: [])
    # Due since a minute, yet not run: the engine's clock decides, and it fired nothing.
    assert handle.prompts == [] and asyncio.run(store.records()) == []
    assert engine.started and engine.closed
    assert engine.synced == [[job.id]] * 3


def test_a_fire_handed_back_runs_the_job_once_and_a_repeat_of_it_does_not(tmp_path, fakes):
    fires = lambda job: [(job.id, job.next_run, 1), (job.id, job.next_run, 2)]  # noqa: E731
    job, store, handle, engine = run(tmp_path, fakes, fires)
    assert engine.results == ["ok", "gone"]
    assert handle.prompts == [("schedule:" + job.id, f"[scheduled job {job.id}] go")]
    [entry] = asyncio.run(store.records())
    assert (entry.status, entry.text) == ("ok", "the answer")
    done = asyncio.run(store.get(job.id))
    assert (done.next_run, done.claimed_by, done.runs) == (None, None, 1)
    assert engine.synced[1:] == [[], []]  # ran and finished: its schedule goes at the next sync


def test_a_second_attempt_of_a_fire_whose_first_died_is_logged_interrupted_and_never_run_again(tmp_path, fakes):
    async def died_mid_run(store, job, clock):
        # The first attempt's crab serve claimed this fire and was killed: its claim stays.
        assert await store.claim(job.id, f"other:1:ab@{format_time(job.next_run)}", clock.now(), fakes_lease)

    fakes_lease = fakes.settings(tmp_path / "x.db").lease
    job, store, handle, engine = run(tmp_path, fakes, lambda job: [(job.id, job.next_run, 2)], before=died_mid_run)
    assert engine.results == ["interrupted"]
    assert handle.prompts == []  # the agent job did not run a second time
    [entry] = asyncio.run(store.records())
    assert entry.status == "error" and entry.error == "interrupted: crab serve stopped during the run"
    left = asyncio.run(store.get(job.id))
    assert (left.claimed_by, left.next_run, left.last_error) == (None, None, "interrupted by shutdown")


def test_an_earlier_fires_dead_claim_is_logged_and_this_fire_runs(tmp_path, fakes):
    async def died_before(store, job, clock):
        assert await store.claim(job.id, "other:1:ab@2026-01-01T00:00:00.000000Z", clock.now(), fakes_lease)

    fakes_lease = fakes.settings(tmp_path / "x.db").lease
    _job, store, handle, engine = run(tmp_path, fakes, lambda job: [(job.id, job.next_run, 1)], before=died_before)
    assert engine.results == ["ok"]
    assert [entry.status for entry in asyncio.run(store.records())] == ["error", "ok"]
    assert len(handle.prompts) == 1
