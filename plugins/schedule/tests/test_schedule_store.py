"""The SQLite job store: plain rows, atomic claims, leases that run out, the log."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta

from crab_schedule.jobs import Job, Origin, RunRecord
from crab_schedule.sqlite_store import SQLiteJobStore
from crab_schedule.timing import make_trigger

NOW = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
LEASE = timedelta(minutes=5)


def job(job_id: str = "j1", due: datetime = NOW) -> Job:
    return Job(
        id=job_id,
        trigger=make_trigger(after="1m", timezone="UTC", now=due - timedelta(minutes=1)),
        mode="reminder",
        text="standup",
        origin=Origin("cli"),
        permissions="ask",
        created=due - timedelta(minutes=1),
        next_run=due,
    )


def test_jobs_are_plain_json_rows(tmp_path):
    store = SQLiteJobStore(tmp_path / "schedule.db")
    asyncio.run(store.add(job()))
    spec = sqlite3.connect(tmp_path / "schedule.db").execute("SELECT spec FROM jobs").fetchone()[0]
    data = json.loads(spec)
    assert data["text"] == "standup" and data["trigger"]["kind"] == "once"
    assert asyncio.run(store.get("j1")) == job()


def test_only_one_of_many_concurrent_claims_wins(tmp_path):
    path = tmp_path / "schedule.db"
    stores = [SQLiteJobStore(path), SQLiteJobStore(path)]
    asyncio.run(stores[0].add(job()))

    async def race() -> list[object]:
        return await asyncio.gather(*(stores[i % 2].claim("j1", f"worker-{i}", NOW, LEASE) for i in range(16)))

    won = [claimed for claimed in asyncio.run(race()) if claimed is not None]
    assert len(won) == 1
    assert asyncio.run(stores[1].due(NOW)) == []  # held by the winner's lease


def test_a_lease_that_runs_out_lets_another_worker_take_the_job(tmp_path):
    store = SQLiteJobStore(tmp_path / "schedule.db")
    asyncio.run(store.add(job()))
    assert asyncio.run(store.claim("j1", "dead", NOW, LEASE)) is not None
    assert asyncio.run(store.claim("j1", "other", NOW + LEASE - timedelta(seconds=1), LEASE)) is None
    later = NOW + LEASE + timedelta(seconds=1)
    assert [j.id for j in asyncio.run(store.due(later))] == ["j1"]
    assert asyncio.run(store.claim("j1", "other", later, LEASE)) is not None
    # the dead worker's late finish does not count; the living one's does
    assert not asyncio.run(store.finish("j1", "dead", ran_at=later, status="ok", error=None, next_run=None))
    assert asyncio.run(store.finish("j1", "other", ran_at=later, status="ok", error=None, next_run=None))
    finished = asyncio.run(store.get("j1"))
    assert finished is not None and finished.next_run is None and finished.runs == 1
    assert asyncio.run(store.list()) == [] and len(asyncio.run(store.list(include_finished=True))) == 1


def test_extend_keeps_a_long_run_claimed(tmp_path):
    store = SQLiteJobStore(tmp_path / "schedule.db")
    asyncio.run(store.add(job()))
    asyncio.run(store.claim("j1", "w", NOW, LEASE))
    assert asyncio.run(store.extend("j1", "w", NOW + 3 * LEASE))
    assert asyncio.run(store.due(NOW + 2 * LEASE)) == []
    assert not asyncio.run(store.extend("j1", "stranger", NOW + 9 * LEASE))


def test_a_job_not_yet_due_cannot_be_claimed_and_run_now_makes_it_due(tmp_path):
    store = SQLiteJobStore(tmp_path / "schedule.db")
    asyncio.run(store.add(job(due=NOW + timedelta(hours=1))))
    assert asyncio.run(store.claim("j1", "w", NOW, LEASE)) is None
    assert asyncio.run(store.set_next_run("j1", NOW))
    assert asyncio.run(store.claim("j1", "w", NOW, LEASE)) is not None
    assert not asyncio.run(store.set_next_run("nope", NOW))


def test_the_log_keeps_order_and_filters_by_job(tmp_path):
    store = SQLiteJobStore(tmp_path / "schedule.db")
    for n in range(3):
        asyncio.run(store.record(RunRecord(f"j{n % 2}", NOW + timedelta(seconds=n), "ok", "log", f"text {n}")))
    assert [r.text for r in asyncio.run(store.records())] == ["text 0", "text 1", "text 2"]
    assert [r.text for r in asyncio.run(store.records("j0"))] == ["text 0", "text 2"]
    assert [r.text for r in asyncio.run(store.records(limit=1))] == ["text 2"]


def test_remove(tmp_path):
    store = SQLiteJobStore(tmp_path / "schedule.db")
    asyncio.run(store.add(job()))
    assert asyncio.run(store.remove("j1")) and not asyncio.run(store.remove("j1"))
