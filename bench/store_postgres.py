"""Benchmark of crab-store-postgres against crab-store-sqlite in the same run.

- append latency (p50, p99) of one process appending to one session;
- sessions resumed per second (``get_session`` + ``entries(since_handoff=True)`` of sessions
  with a long history before their last handoff);
- appends per second with 1, 2 and 4 worker processes, each on its own session;
- crab-schedule jobs claimed (and finished) per second by 1, 2 and 4 worker processes draining
  one table of due jobs, polling as crab-schedule's runner does (``due``, then ``claim`` each).

The Postgres server is a throwaway cluster started here (``initdb``; as root it runs as
``nobody``) with ``fsync`` on and ``synchronous_commit = off``: like SQLite's WAL with
``synchronous = NORMAL``, a commit survives a killed process without waiting for the disk. Pass
``--dsn`` to measure a server of your own instead (a schema ``crab_bench`` is created there).
Usage: ``.venv/bin/python bench/store_postgres.py [--appends 2000] [--sessions 200] [--dsn DSN]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from crab._contracts.storage import Store

WORKSPACE = "/bench/project"


def user(n: int) -> dict[str, Any]:
    return {"v": 1, "role": "user", "content": f"Please look at file number {n} and fix the bug in it."}


def assistant(n: int) -> dict[str, Any]:
    return {
        "v": 1,
        "role": "assistant",
        "content": "I will read the file first.",
        "tool_calls": [{"id": f"c{n}", "name": "read", "arguments": {"path": f"src/module_{n}.py"}}],
        "usage": {"input_tokens": 1200 + n % 500, "output_tokens": 40, "cost": 0.0004},
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def append_latency(store: Store, count: int) -> list[float]:
    info = await store.create_session(WORKSPACE)
    times = []
    for n in range(count):
        payload = user(n) if n % 2 else assistant(n)
        start = time.perf_counter()
        await store.append(info.id, "message", payload)
        times.append(time.perf_counter() - start)
    return times


async def resumes_per_second(store: Store, sessions: int, history: int, tail: int) -> float:
    ids = []
    for s in range(sessions):
        info = await store.create_session(WORKSPACE)
        for n in range(history):
            await store.append(info.id, "message", user(n) if n % 2 else assistant(n))
        await store.append(info.id, "anchor", {"name": f"h{s}", "kind": "handoff", "state": {"summary": "so far"}})
        for n in range(tail):
            await store.append(info.id, "message", user(n))
        ids.append(info.id)
    start = time.perf_counter()
    for session_id in ids:
        await store.get_session(session_id)
        await store.entries(session_id, since_handoff=True)
    return sessions / (time.perf_counter() - start)


def make_store(kind: str, where: str) -> Store:
    if kind == "sqlite":
        from crab_store_sqlite import SqliteStore

        return SqliteStore(Path(where) / "crab.db")
    from crab_store_postgres import PostgresStore

    return PostgresStore(where, schema="crab_bench", pool_size=2)


def _worker(kind: str, where: str, count: int, ready: Any, go: Any, out: Any) -> None:
    async def main() -> None:
        store = make_store(kind, where)
        await store.open()
        info = await store.create_session(WORKSPACE)
        ready.release()
        go.wait()
        start = time.perf_counter()
        for n in range(count):
            await store.append(info.id, "message", user(n))
        out.put(time.perf_counter() - start)
        await store.close()

    asyncio.run(main())


def appends_per_second(kind: str, where: str, workers: int, count: int) -> float:
    context = multiprocessing.get_context("spawn")
    ready, go, out = context.Semaphore(0), context.Event(), context.Queue()
    procs = [context.Process(target=_worker, args=(kind, where, count, ready, go, out)) for _ in range(workers)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.acquire()
    start = time.perf_counter()
    go.set()
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - start
    return workers * count / elapsed


def _job_worker(dsn: str, schema: str, name: str, batch: bool, ready: Any, go: Any, out: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from crab_store_postgres import PostgresJobStore, PostgresStore

    async def main() -> None:
        store = PostgresJobStore(PostgresStore(dsn, schema=schema, pool_size=2))
        await store.list()  # connected before the clock starts
        ready.release()
        go.wait()
        done = 0
        lease = timedelta(seconds=60)
        while True:
            now = datetime.now(UTC)
            if batch:  # what crab-schedule's runner does with this store: claim_due (SKIP LOCKED)
                claimed = await store.claim_due(name, now, lease, 20)
                if not claimed and not await store.due(now, limit=1):
                    break
            else:  # the plain interface: due, then claim each (workers race for the same jobs)
                due = await store.due(now, limit=20)
                if not due:
                    break
                claimed = [job for job in due if await store.claim(job.id, name, now, lease)]
            for job in claimed:
                await store.finish(job.id, name, ran_at=now, status="ok", error=None, next_run=None)
                done += 1
        out.put(done)
        await store.close()

    asyncio.run(main())


def jobs_per_second(dsn: str, workers: int, count: int, batch: bool) -> tuple[float, int]:
    from datetime import UTC, datetime, timedelta

    from crab_jobs_kit import Job, Origin, Trigger, new_job_id
    from crab_store_postgres import PostgresJobStore, PostgresStore

    schema = f"crab_bench_jobs_{workers}_{int(batch)}"

    async def fill() -> None:
        store = PostgresJobStore(PostgresStore(dsn, schema=schema))
        now = datetime.now(UTC) - timedelta(seconds=1)
        for _ in range(count):
            await store.add(
                Job(
                    id=new_job_id(),
                    trigger=Trigger(kind="once", start=now),
                    mode="reminder",
                    text="tea",
                    origin=Origin(source="cli"),
                    permissions="ask",
                    created=now,
                    next_run=now,
                )
            )
        await store.close()

    asyncio.run(fill())
    context = multiprocessing.get_context("spawn")
    ready, go, out = context.Semaphore(0), context.Event(), context.Queue()
    procs = [
        context.Process(target=_job_worker, args=(dsn, schema, f"w{n}", batch, ready, go, out)) for n in range(workers)
    ]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.acquire()
    start = time.perf_counter()
    go.set()
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - start
    ran = sum(out.get() for _ in procs)
    return ran / elapsed, ran


async def measure(kind: str, where: str, args: argparse.Namespace) -> dict[str, float]:
    store = make_store(kind, where)
    await store.open()
    try:
        latency = await append_latency(store, args.appends)
        resumes = await resumes_per_second(store, args.sessions, history=200, tail=40)
    finally:
        await store.close()
    return {
        "p50": percentile(latency, 0.5) * 1e3,
        "p99": percentile(latency, 0.99) * 1e3,
        "mean": statistics.fmean(latency) * 1e3,
        "resumes": resumes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--worker-appends", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=1000, help="due jobs drained per worker count")
    parser.add_argument("--dsn", help="measure this server instead of a throwaway one")
    args = parser.parse_args()

    cluster = None
    dsn = args.dsn
    if dsn is None:
        from crab_store_postgres.testing import TempCluster, find_binaries

        binaries = find_binaries()
        if binaries is None:
            sys.exit("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql, or pass --dsn")
        cluster = TempCluster(binaries, settings={"synchronous_commit": "off"}).start()
        dsn = cluster.dsn()
    try:
        with tempfile.TemporaryDirectory() as folder:
            rows = {
                "sqlite": asyncio.run(measure("sqlite", folder, args)),
                "postgres": asyncio.run(measure("postgres", dsn, args)),
            }
            print(
                f"one process, {args.appends} appends to one session; {args.sessions} resumes (200 entries + handoff + 40)"
            )
            print(f"{'store':10} {'append p50 ms':>14} {'p99 ms':>8} {'mean ms':>8} {'resumed/s':>10}")
            for name, row in rows.items():
                print(f"{name:10} {row['p50']:14.3f} {row['p99']:8.3f} {row['mean']:8.3f} {row['resumes']:10.0f}")
            sq, pg = rows["sqlite"], rows["postgres"]
            print(
                f"postgres/sqlite: append p50 x{pg['p50'] / sq['p50']:.1f}, resumes/s x{pg['resumes'] / sq['resumes']:.2f}"
            )
            print()
            print(f"appends per second, each worker process on its own session ({args.worker_appends} appends each)")
            print(f"{'store':10} {'1 worker':>10} {'2 workers':>10} {'4 workers':>10}")
            for kind, where in (("sqlite", folder), ("postgres", dsn)):
                rates = [appends_per_second(kind, where, n, args.worker_appends) for n in (1, 2, 4)]
                print(f"{kind:10} " + " ".join(f"{r:10.0f}" for r in rates))
            print()
            print(f"crab-schedule jobs claimed and finished per second, {args.jobs} due jobs on Postgres")
            print(f"{'workers':>8} {'claim_due jobs/s':>17} {'due+claim jobs/s':>17}")
            for workers in (1, 2, 4):
                rates = []
                for batch in (True, False):
                    rate, ran = jobs_per_second(dsn, workers, args.jobs, batch)
                    rates.append(f"{rate:17.0f}" if ran == args.jobs else f"{'ran ' + str(ran) + '!':>17}")
                print(f"{workers:8} " + " ".join(rates))
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
