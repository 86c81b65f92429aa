"""The job store on SQLite (``$CRAB_HOME/schedule.db``): WAL, one short transaction per call.

Claims are atomic: ``BEGIN IMMEDIATE`` takes the write lock, and the ``UPDATE … WHERE (claimed_by
IS NULL OR lease_until < now)`` only succeeds for one worker; a worker that was killed leaves a
lease that runs out, and then the job is due again. Times are fixed-width UTC ISO text, so SQL
compares them as it compares instants.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

from crab import StoreError
from crab_jobs_kit import JOB_COLUMNS, job_from_row

from crab_schedule.jobs import Job, RunRecord, Status
from crab_schedule.timing import format_time, parse_stored_time

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    created TEXT NOT NULL,
    next_run TEXT,
    claimed_by TEXT,
    lease_until TEXT,
    last_run TEXT,
    last_status TEXT,
    last_error TEXT,
    runs INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_next_run ON jobs(next_run);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_job ON runs(job_id);
"""


def _time(text: str | None) -> datetime | None:
    return parse_stored_time(text) if text else None


class SQLiteJobStore:
    """``JobStore`` on one SQLite file; each call opens a connection in a worker thread, runs one
    short transaction and closes it, so nothing stays open between calls."""

    def __init__(self, path: Path, busy_timeout: float = 10.0) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
            conn.execute("PRAGMA synchronous=NORMAL")
            if not self._ready:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(SCHEMA)
                self._ready = True
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the job store {self.path}: {exc}") from None
        return conn

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            conn = self._connect()
            try:
                return work(conn)
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise StoreError(f"job store {self.path}: {exc}") from None
            finally:
                conn.close()

        return await asyncio.to_thread(call)

    # --- JobStore ----------------------------------------------------------------------------

    async def add(self, job: Job) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO jobs (id, spec, created, next_run, runs) VALUES (?, ?, ?, ?, 0)",
                (
                    job.id,
                    json.dumps(job.spec(), ensure_ascii=False),
                    format_time(job.created),
                    format_time(job.next_run) if job.next_run else None,
                ),
            )

        await self._run(work)

    async def get(self, job_id: str) -> Job | None:
        def work(conn: sqlite3.Connection) -> Job | None:
            row = conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return job_from_row(row, _time) if row else None

        return await self._run(work)

    async def list(self, include_finished: bool = False) -> builtins.list[Job]:
        where = "" if include_finished else "WHERE next_run IS NOT NULL"
        query = f"SELECT {JOB_COLUMNS} FROM jobs {where} ORDER BY next_run IS NULL, next_run, created"
        return await self._run(lambda conn: [job_from_row(row, _time) for row in conn.execute(query)])

    async def remove(self, job_id: str) -> bool:
        return await self._run(lambda conn: conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,)).rowcount > 0)

    async def due(self, now: datetime, limit: int = 100) -> builtins.list[Job]:
        stamp = format_time(now)
        query = (
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE next_run IS NOT NULL AND next_run <= ? "
            "AND (claimed_by IS NULL OR lease_until < ?) ORDER BY next_run LIMIT ?"
        )
        return await self._run(
            lambda conn: [job_from_row(row, _time) for row in conn.execute(query, (stamp, stamp, limit))]
        )

    async def claim(self, job_id: str, worker: str, now: datetime, lease: timedelta) -> Job | None:
        stamp = format_time(now)

        def work(conn: sqlite3.Connection) -> Job | None:
            conn.execute("BEGIN IMMEDIATE")
            changed = conn.execute(
                "UPDATE jobs SET claimed_by = ?, lease_until = ? WHERE id = ? AND next_run IS NOT NULL "
                "AND next_run <= ? AND (claimed_by IS NULL OR lease_until < ?)",
                (worker, format_time(now + lease), job_id, stamp, stamp),
            ).rowcount
            row = (
                conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone() if changed else None
            )
            conn.execute("COMMIT")
            return job_from_row(row, _time) if row else None

        return await self._run(work)

    async def extend(self, job_id: str, worker: str, until: datetime) -> bool:
        return await self._run(
            lambda conn: (
                conn.execute(
                    "UPDATE jobs SET lease_until = ? WHERE id = ? AND claimed_by = ?",
                    (format_time(until), job_id, worker),
                ).rowcount
                > 0
            )
        )

    async def finish(
        self,
        job_id: str,
        worker: str,
        *,
        ran_at: datetime,
        status: Status,
        error: str | None,
        next_run: datetime | None,
    ) -> bool:
        return await self._run(
            lambda conn: (
                conn.execute(
                    "UPDATE jobs SET claimed_by = NULL, lease_until = NULL, next_run = ?, last_run = ?, "
                    "last_status = ?, last_error = ?, runs = runs + 1 WHERE id = ? AND claimed_by = ?",
                    (format_time(next_run) if next_run else None, format_time(ran_at), status, error, job_id, worker),
                ).rowcount
                > 0
            )
        )

    async def set_next_run(self, job_id: str, when: datetime) -> bool:
        return await self._run(
            lambda conn: (
                conn.execute("UPDATE jobs SET next_run = ? WHERE id = ?", (format_time(when), job_id)).rowcount > 0
            )
        )

    async def record(self, entry: RunRecord) -> None:
        await self._run(
            lambda conn: conn.execute(
                "INSERT INTO runs (job_id, data) VALUES (?, ?)",
                (entry.job_id, json.dumps(entry.to_dict(), ensure_ascii=False)),
            )
        )

    async def records(self, job_id: str | None = None, limit: int = 50) -> builtins.list[RunRecord]:
        def work(conn: sqlite3.Connection) -> builtins.list[RunRecord]:
            if job_id is None:
                rows = conn.execute("SELECT data FROM runs ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
            else:
                rows = conn.execute(
                    "SELECT data FROM runs WHERE job_id = ? ORDER BY seq DESC LIMIT ?", (job_id, limit)
                ).fetchall()
            return [RunRecord.from_dict(json.loads(row[0])) for row in reversed(rows)]

        return await self._run(work)

    async def close(self) -> None:
        return None  # every call closes its own connection
