"""Benchmark of crab-schedule's SQLite job store: what one poll costs as the store grows, and how
fast one or two worker processes drain a backlog of due jobs (each run exactly once).

Usage: ``.venv/bin/python bench/schedule.py [--jobs 500]``. Needs crab-schedule installed.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from crab_schedule.jobs import Job, Origin
from crab_schedule.sqlite_store import SQLiteJobStore
from crab_schedule.timing import make_trigger

NOW = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)
LEASE = timedelta(minutes=5)


def fill(path: Path, count: int, due: int) -> None:
    """``count`` jobs, the first ``due`` of them due at NOW, the rest in an hour."""

    async def go() -> None:
        store = SQLiteJobStore(path)
        for n in range(count):
            when = NOW if n < due else NOW + timedelta(hours=1)
            trigger = make_trigger(after="1m", timezone="UTC", now=when - timedelta(minutes=1))
            await store.add(Job(f"j{n}", trigger, "reminder", "x", Origin("cli"), "ask", NOW, when))

    asyncio.run(go())


def poll_cost(count: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schedule.db"
        fill(path, count, 10)
        store = SQLiteJobStore(path)
        times = []
        for _ in range(30):
            start = time.perf_counter()
            asyncio.run(store.due(NOW))
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000


def drain(path: str, worker: str) -> int:
    async def go() -> int:
        store = SQLiteJobStore(Path(path))
        ran = 0
        while True:
            jobs = await store.due(NOW, limit=20)
            if not jobs:
                return ran
            for job in jobs:
                if await store.claim(job.id, worker, NOW, LEASE) is not None:
                    await store.finish(job.id, worker, ran_at=NOW, status="ok", error=None, next_run=None)
                    ran += 1

    return asyncio.run(go())


def drain_time(jobs: int, workers: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schedule.db"
        fill(path, jobs, jobs)
        start = time.perf_counter()
        with multiprocessing.Pool(workers) as pool:
            counts = pool.starmap(drain, [(str(path), f"w{i}") for i in range(workers)])
        elapsed = time.perf_counter() - start
        finished = asyncio.run(SQLiteJobStore(path).list(include_finished=True))
        assert all(job.runs == 1 for job in finished), "a job ran twice or not at all"
        return elapsed, sum(counts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=500)
    args = parser.parse_args()
    print("one poll (due jobs query), median of 30:")
    for count in (100, 1_000, 10_000):
        print(f"  {count:>6} jobs in the store: {poll_cost(count):7.2f} ms")
    print(f"draining {args.jobs} due jobs (claim + finish each):")
    for workers in (1, 2):
        elapsed, ran = drain_time(args.jobs, workers)
        print(f"  {workers} worker process(es): {elapsed:6.2f} s, {ran / elapsed:7.0f} jobs/s, each run once")


if __name__ == "__main__":
    main()
