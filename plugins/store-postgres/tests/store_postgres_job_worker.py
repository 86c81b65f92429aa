"""A crab-schedule worker on the PostgreSQL job store, for the multi-worker job tests.

    python store_postgres_job_worker.py DSN SCHEMA WORKER LEASE_SECONDS [--hang] [--batch]

Polls like crab-schedule's runner (``due``, then ``claim`` each; with ``--batch``,
``claim_due`` as the runner does with this store) until no job is left to run,
printing ``ran JOB_ID`` for each job it ran (a run = ``finish`` with no next run, and a line in
the schedule log). ``--hang`` claims the first due job, prints ``running JOB_ID`` and then waits
forever without finishing it: the test kills the process there with SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta

from crab_jobs_kit import RunRecord
from crab_store_postgres import PostgresJobStore, PostgresStore


async def main(dsn: str, schema: str, worker: str, lease: float, hang: bool, batch: bool) -> None:
    store = PostgresJobStore(PostgresStore(dsn, schema=schema, pool_size=2))
    deadline = asyncio.get_running_loop().time() + 120
    try:
        while asyncio.get_running_loop().time() < deadline:
            if not await store.list():
                return  # every job has run
            now = datetime.now(UTC)
            if batch:
                taken = await store.claim_due(worker, now, timedelta(seconds=lease), 5)
            else:
                taken = [
                    job
                    for job in await store.due(now)
                    if await store.claim(job.id, worker, now, timedelta(seconds=lease))
                ]
            for job in taken:
                if hang:
                    print(f"running {job.id}", flush=True)
                    await asyncio.sleep(3600)
                await store.record(RunRecord(job.id, now, "ok", "log", text=f"ran by {worker}", worker=worker))
                if await store.finish(job.id, worker, ran_at=now, status="ok", error=None, next_run=None):
                    print(f"ran {job.id}", flush=True)
            await asyncio.sleep(0.05)
    finally:
        await store.close()


if __name__ == "__main__":
    dsn, schema, worker, lease = sys.argv[1:5]
    asyncio.run(main(dsn, schema, worker, float(lease), "--hang" in sys.argv[5:], "--batch" in sys.argv[5:]))
