"""Benchmark of crab-schedule on its SQLite job store: what one poll costs as the store grows, how
fast one or two processes drain a backlog of due jobs (claim + finish, each run exactly once), and
how fast 1, 2 and 4 ``crab serve`` workers (the real runner) work off 200 due agent jobs.

Each simulated agent turn holds its worker's event loop for ``--turn-cpu`` ms (what the process
itself does for a turn: streaming, tools, the store; ``time.sleep``, so the shared machine's
cores are not burned) and then waits ``--turn-wait`` ms for the model. A worker whose event loop
is busy cannot run more turns at once, so the figure that matters is how the backlog spreads
over the workers: what one worker claims, the others cannot run.

Usage: ``.venv/bin/python bench/schedule.py [--jobs 500] [--agent-jobs 200]``. Needs crab-schedule.
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
from typing import Any

from crab_schedule.jobs import Job, Origin
from crab_schedule.runner import Scheduler
from crab_schedule.settings import read_settings
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


class _Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id


class _Outcome:
    stop = "end"
    error = None
    text = "done"


class BenchHandle:
    """The parts of ``crab.AgentHandle`` the runner uses; each turn costs ``cpu`` then ``wait`` seconds."""

    config = None

    def __init__(self, cpu: float, wait: float) -> None:
        self.cpu, self.wait = cpu, wait

    def notice(self, message: str, level: str = "info") -> None:
        print(f"  worker notice: {message}")

    def subscribe(self, listener: object, *, session: object = None) -> object:
        return lambda: None

    async def session_for(self, channel: str, address: str, **_: object) -> _Session:
        return _Session(f"{channel}:{address}")

    async def handle_input(self, session: _Session, text: str) -> _Outcome:
        # The process's own share of a turn, on purpose blocking: nothing else runs on its loop meanwhile.
        time.sleep(self.cpu)  # noqa: ASYNC251
        await asyncio.sleep(self.wait)  # the model's answer: other turns run meanwhile
        return _Outcome()


def job_store(where: str) -> Any:
    """The SQLite store at path ``where``, or crab-store-postgres's for ``postgres DSN SCHEMA``."""
    if not where.startswith("postgres "):
        return SQLiteJobStore(Path(where))
    from crab_store_postgres import PostgresJobStore, PostgresStore

    _, dsn, schema = where.split(" ")
    return PostgresJobStore(PostgresStore(dsn, schema=schema, pool_size=2))


def serve_worker(where: str, worker: str, cpu: float, wait: float, poll: float, extra: dict[str, object]) -> int:
    """One ``crab serve`` scheduler until no job is left to run; how many runs it finished."""

    async def go() -> int:
        store = job_store(where)
        settings = read_settings({"timezone": "UTC", "poll_interval": poll, **extra})
        scheduler = Scheduler(settings, store=store, worker=worker)
        serving = asyncio.ensure_future(scheduler.run(BenchHandle(cpu, wait)))  # type: ignore[arg-type]
        watcher = job_store(where)  # run() closes its store when it ends
        # Other processes finish jobs too, so poll; a finished once-job leaves the list.
        while await watcher.list():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        await scheduler.stop()
        await serving
        ran = sum(1 for record in await watcher.records(limit=100_000) if record.worker == worker)
        await watcher.close()
        return ran

    return asyncio.run(go())


def serve_time(
    where: str, jobs: int, workers: int, cpu: float, wait: float, poll: float, extra: dict[str, object]
) -> tuple[float, list[int]]:
    async def add() -> None:
        store, now = job_store(where), datetime.now(UTC)
        for n in range(jobs):
            trigger = make_trigger(after="1m", timezone="UTC", now=now - timedelta(minutes=1))
            await store.add(Job(f"j{n}", trigger, "agent", "x", Origin("cli"), "ask", now, now))
        await store.close()

    async def check() -> None:
        store = job_store(where)
        finished = await store.list(include_finished=True)
        assert len(finished) == jobs, "a job went missing"
        assert all(j.runs == 1 and j.last_status == "ok" for j in finished), "a job ran twice or not at all"
        await store.close()

    asyncio.run(add())
    start = time.perf_counter()
    with multiprocessing.Pool(workers) as pool:
        counts = pool.starmap(serve_worker, [(where, f"w{i}", cpu, wait, poll, extra) for i in range(workers)])
    elapsed = time.perf_counter() - start
    asyncio.run(check())
    return elapsed, counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--agent-jobs", type=int, default=200)
    parser.add_argument("--turn-cpu", type=float, default=20.0, help="ms a turn holds its worker's event loop")
    parser.add_argument("--turn-wait", type=float, default=200.0, help="ms a turn waits for the model")
    parser.add_argument("--poll", type=float, default=1.0, help="poll_interval, seconds")
    parser.add_argument("--part", choices=("all", "store", "workers"), default="all")
    parser.add_argument("--max-running", type=int, help="[plugins.schedule] max_running (default: its default)")
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite", help="the workers' job store")
    args = parser.parse_args()
    if args.part in ("all", "store"):
        print("one poll (due jobs query), median of 30:")
        for count in (100, 1_000, 10_000):
            print(f"  {count:>6} jobs in the store: {poll_cost(count):7.2f} ms")
        print(f"draining {args.jobs} due jobs (claim + finish each):")
        for workers in (1, 2):
            elapsed, ran = drain_time(args.jobs, workers)
            print(f"  {workers} worker process(es): {elapsed:6.2f} s, {ran / elapsed:7.0f} jobs/s, each run once")
    if args.part in ("all", "workers"):
        serving(args)


def serving(args: argparse.Namespace) -> None:
    cpu, wait = args.turn_cpu / 1000, args.turn_wait / 1000
    extra = {} if args.max_running is None else {"max_running": args.max_running}
    running = read_settings(extra).max_running
    print(
        f"crab serve workers on {args.store} running {args.agent_jobs} due agent jobs ({args.turn_cpu:g} ms of "
        f"the loop + {args.turn_wait:g} ms of waiting per turn, poll_interval {args.poll:g}s, max_running {running}):"
    )
    with tempfile.TemporaryDirectory() as folder:
        cluster = None
        if args.store == "postgres":
            from crab_store_postgres.testing import TempCluster, find_binaries

            binaries = find_binaries()
            if binaries is None:
                raise SystemExit("no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
            cluster = TempCluster(binaries).start()
        try:
            for workers in (1, 2, 4):
                if cluster is None:
                    where = str(Path(folder) / f"schedule{workers}.db")
                else:
                    where = f"postgres {cluster.dsn()} bench_schedule_{workers}"
                elapsed, counts = serve_time(where, args.agent_jobs, workers, cpu, wait, args.poll, extra)
                split = "/".join(str(count) for count in counts)
                print(
                    f"  {workers} worker(s): {elapsed:6.2f} s, {args.agent_jobs / elapsed:6.1f} jobs/s, "
                    f"runs per worker {split}"
                )
        finally:
            if cluster is not None:
                cluster.stop()


if __name__ == "__main__":
    main()
