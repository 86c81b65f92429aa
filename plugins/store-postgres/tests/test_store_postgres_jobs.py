"""crab-schedule's job store on PostgreSQL: the interface, four workers polling one job table
(each due job runs once), and a worker killed mid-job (the job runs again after its lease, once)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from crab_jobs_kit import Job, JobStore, Origin, RunRecord, Trigger, new_job_id
from crab_store_postgres import PostgresJobStore, PostgresStore

WORKER = Path(__file__).with_name("store_postgres_job_worker.py")
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def job(due: datetime, text: str = "tea") -> Job:
    return Job(
        id=new_job_id(),
        trigger=Trigger(kind="once", start=due),
        mode="reminder",
        text=text,
        origin=Origin(source="cli", channel="telegram", address="123"),
        permissions="ask",
        created=due - timedelta(hours=1),
        next_run=due,
        name="a name ü",
    )


def jobs_store(dsn: str, schema: str) -> PostgresJobStore:
    return PostgresJobStore(PostgresStore(dsn, schema=schema))


def test_the_job_store_interface(pg_dsn: str, pg_schema: str) -> None:
    async def go() -> None:
        store: JobStore = jobs_store(pg_dsn, pg_schema)
        first, later = job(NOW), job(NOW + timedelta(hours=1), "later")
        await store.add(later)
        await store.add(first)
        assert await store.get(first.id) == first
        assert await store.get("nope") is None
        assert [j.id for j in await store.list()] == [first.id, later.id]
        assert [j.id for j in await store.due(NOW)] == [first.id]

        lease = timedelta(seconds=60)
        claimed = await store.claim(first.id, "w1", NOW, lease)
        assert claimed is not None and claimed.claimed_by == "w1" and claimed.lease_until == NOW + lease
        assert await store.claim(first.id, "w2", NOW, lease) is None  # held
        assert await store.due(NOW) == []
        assert await store.claim(later.id, "w2", NOW, lease) is None  # not due yet
        assert await store.extend(first.id, "w1", NOW + timedelta(seconds=120))
        assert not await store.extend(first.id, "w2", NOW + timedelta(seconds=120))
        # The lease runs out: another worker takes the job, and the first one's finish is refused.
        after = NOW + timedelta(seconds=121)
        assert (await store.claim(first.id, "w2", after, lease)) is not None
        assert not await store.finish(first.id, "w1", ran_at=after, status="ok", error=None, next_run=None)
        assert await store.finish(first.id, "w2", ran_at=after, status="error", error="boom", next_run=None)
        done = await store.get(first.id)
        assert done is not None
        assert (done.runs, done.last_status, done.last_error, done.next_run, done.claimed_by) == (
            1,
            "error",
            "boom",
            None,
            None,
        )
        assert [j.id for j in await store.list()] == [later.id]
        assert [j.id for j in await store.list(include_finished=True)] == [later.id, first.id]

        assert await store.set_next_run(first.id, NOW)
        assert [j.id for j in await store.due(NOW)] == [first.id]
        assert not await store.set_next_run("nope", NOW)

        await store.record(RunRecord(first.id, NOW, "ok", "telegram:123", text="tea ☕", worker="w2"))
        await store.record(RunRecord(later.id, NOW, "missed", "log"))
        assert [r.job_id for r in await store.records()] == [first.id, later.id]
        assert [r.text for r in await store.records(first.id)] == ["tea ☕"]
        assert len(await store.records(limit=1)) == 1

        assert await store.remove(later.id)
        assert not await store.remove(later.id)
        await store.close()

    asyncio.run(go())


def test_claim_due_takes_each_job_once_across_callers(pg_dsn: str, pg_schema: str) -> None:
    async def go() -> None:
        store = jobs_store(pg_dsn, pg_schema)
        ids = set()
        for n in range(30):
            added = job(NOW - timedelta(seconds=n))
            ids.add(added.id)
            await store.add(added)
        lease = timedelta(seconds=60)
        batches = await asyncio.gather(*(store.claim_due(f"w{n}", NOW, lease, limit=4) for n in range(12)))
        claimed = [j.id for batch in batches for j in batch]
        assert sorted(claimed) == sorted(ids)  # every due job claimed, none twice
        await store.close()

    asyncio.run(go())


def _worker(dsn: str, schema: str, name: str, lease: float, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), dsn, schema, name, str(lease), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_four_workers_polling_one_job_table_run_each_due_job_once(pg_dsn: str, pg_schema: str) -> None:
    async def add(count: int) -> set[str]:
        store = jobs_store(pg_dsn, pg_schema)
        now = datetime.now(UTC)
        ids = set()
        for n in range(count):
            added = job(now - timedelta(seconds=n % 7))
            ids.add(added.id)
            await store.add(added)
        await store.close()
        return ids

    ids = asyncio.run(add(120))
    # Two poll as the plain interface allows (due, then claim), two as crab-schedule's runner does here (claim_due).
    workers = [_worker(pg_dsn, pg_schema, f"worker-{n}", 60, *(["--batch"] if n % 2 else [])) for n in range(4)]
    ran: list[str] = []
    for worker in workers:
        out, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        ran += [line.split()[1] for line in out.splitlines() if line.startswith("ran ")]
    assert sorted(ran) == sorted(ids)  # each due job ran, none twice

    async def check() -> None:
        store = jobs_store(pg_dsn, pg_schema)
        finished = await store.list(include_finished=True)
        assert {j.id: j.runs for j in finished} == dict.fromkeys(ids, 1)
        records = await store.records(limit=1000)
        assert sorted(r.job_id for r in records) == sorted(ids)
        await store.close()

    asyncio.run(check())


@pytest.mark.slow
def test_a_worker_killed_mid_job_releases_it_after_the_lease(pg_dsn: str, pg_schema: str) -> None:
    async def setup() -> Job:
        store = jobs_store(pg_dsn, pg_schema)
        added = job(datetime.now(UTC) - timedelta(seconds=1))
        await store.add(added)
        await store.close()
        return added

    added = asyncio.run(setup())
    dying = _worker(pg_dsn, pg_schema, "dying", 2.0, "--hang")
    assert dying.stdout is not None
    line = dying.stdout.readline().strip()
    assert line == f"running {added.id}", (line, dying.stderr.read() if dying.stderr else "")

    async def held() -> Job:
        store = jobs_store(pg_dsn, pg_schema)
        found = await store.get(added.id)
        await store.close()
        assert found is not None
        return found

    claimed = asyncio.run(held())
    assert claimed.claimed_by == "dying" and claimed.lease_until is not None
    os.kill(dying.pid, signal.SIGKILL)
    dying.wait(timeout=30)

    taker = _worker(pg_dsn, pg_schema, "taker", 60)
    out, err = taker.communicate(timeout=120)
    assert taker.returncode == 0, err
    assert out.split() == ["ran", added.id]  # once, by the next worker
    after = asyncio.run(held())
    assert (after.runs, after.claimed_by, after.next_run) == (1, None, None)
    assert after.last_run is not None and after.last_run >= claimed.lease_until  # only once the lease ran out
