"""``PostgresJobStore``: crab-schedule's job store (``crab.JobStore``) on the same PostgreSQL schema.

A claim is one statement: ``UPDATE jobs … WHERE id = (SELECT id … FOR UPDATE SKIP LOCKED)``. A
job that another worker is claiming right now is skipped instead of waited for, and a job whose
claim has committed no longer matches (``claimed_by`` set, lease live), so a due job is claimed by
exactly one worker however many poll. ``claim_due`` takes up to N due jobs in one statement, the
shape a queue of many workers wants. A killed worker's claim simply runs out: ``lease_until`` in
the past makes the job due again, and ``finish`` from a worker whose lease was taken over changes
nothing (it matches on ``claimed_by``).

Why not procrastinate: the schedule's interface already is the queue (due, claim with a lease,
extend, finish), and its jobs are rows crab-schedule reads and edits (list, remove, run-now, the
log); a task-queue library would bring its own tables, worker loop and task model around the same
``SKIP LOCKED`` statement, and crab-schedule's runner would have to give up its own.
"""

from __future__ import annotations

import builtins
import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from crab_jobs_kit import JOB_COLUMNS, Job, RunRecord, job_from_row
from crab_sql_kit import payload_json

if TYPE_CHECKING:
    from crab_jobs_kit import Status

    from crab_store_postgres.store import PostgresStore


def _utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


class PostgresJobStore:
    """Jobs and the schedule log in the ``jobs`` and ``job_runs`` tables of the store's schema.

    It shares the session store's settings (DSN, schema, pool); the connection is opened on the
    first call, since the job store interface has no ``open``.
    """

    name = "postgres"

    def __init__(self, database: PostgresStore) -> None:
        self._db = database

    async def _fetch(self, sql: str, params: Any, *, one: bool = False) -> Any:
        await self._db.open()
        return await self._db._call(self._query(sql, params, one), "the job store failed")

    async def _query(self, sql: str, params: Any, one: bool) -> Any:
        async with self._db.pool.connection() as conn:
            cur = await conn.execute(sql.encode("utf-8"), params)
            if cur.description is None:
                return cur.rowcount
            return await cur.fetchone() if one else await cur.fetchall()

    # --- JobStore ----------------------------------------------------------------------------

    async def add(self, job: Job) -> None:
        await self._fetch(
            "INSERT INTO jobs (id, spec, created, next_run, runs) VALUES (%s, %s, %s, %s, 0)",
            (job.id, payload_json(job.spec()), job.created, job.next_run),
        )

    async def get(self, job_id: str) -> Job | None:
        row = await self._fetch(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = %s", (job_id,), one=True)
        return job_from_row(row, _utc) if row else None

    async def list(self, include_finished: bool = False) -> builtins.list[Job]:
        where = "" if include_finished else "WHERE next_run IS NOT NULL"
        rows = await self._fetch(
            f"SELECT {JOB_COLUMNS} FROM jobs {where} ORDER BY next_run IS NULL, next_run, created", ()
        )
        return [job_from_row(r, _utc) for r in rows]

    async def remove(self, job_id: str) -> bool:
        return bool(await self._fetch("DELETE FROM jobs WHERE id = %s", (job_id,)))

    async def due(self, now: datetime, limit: int = 100) -> builtins.list[Job]:
        rows = await self._fetch(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE next_run IS NOT NULL AND next_run <= %(now)s "
            "AND (claimed_by IS NULL OR lease_until < %(now)s) ORDER BY next_run LIMIT %(limit)s",
            {"now": now, "limit": limit},
        )
        return [job_from_row(r, _utc) for r in rows]

    async def claim(self, job_id: str, worker: str, now: datetime, lease: timedelta) -> Job | None:
        row = await self._fetch(
            f"UPDATE jobs SET claimed_by = %(worker)s, lease_until = %(until)s WHERE id = ("
            "SELECT id FROM jobs WHERE id = %(id)s AND next_run IS NOT NULL AND next_run <= %(now)s "
            "AND (claimed_by IS NULL OR lease_until < %(now)s) FOR UPDATE SKIP LOCKED"
            f") RETURNING {JOB_COLUMNS}",
            {"worker": worker, "until": now + lease, "id": job_id, "now": now},
            one=True,
        )
        return job_from_row(row, _utc) if row else None

    async def claim_due(self, worker: str, now: datetime, lease: timedelta, limit: int = 10) -> builtins.list[Job]:
        """Claim up to ``limit`` due jobs in one statement, oldest due first (what a busy queue wants)."""
        rows = await self._fetch(
            f"UPDATE jobs SET claimed_by = %(worker)s, lease_until = %(until)s WHERE id IN ("
            "SELECT id FROM jobs WHERE next_run IS NOT NULL AND next_run <= %(now)s "
            "AND (claimed_by IS NULL OR lease_until < %(now)s) ORDER BY next_run LIMIT %(limit)s "
            f"FOR UPDATE SKIP LOCKED) RETURNING {JOB_COLUMNS}",
            {"worker": worker, "until": now + lease, "now": now, "limit": limit},
        )
        return sorted((job_from_row(r, _utc) for r in rows), key=lambda job: job.next_run or job.created)

    async def extend(self, job_id: str, worker: str, until: datetime) -> bool:
        changed = await self._fetch(
            "UPDATE jobs SET lease_until = %s WHERE id = %s AND claimed_by = %s", (until, job_id, worker)
        )
        return bool(changed)

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
        changed = await self._fetch(
            "UPDATE jobs SET claimed_by = NULL, lease_until = NULL, next_run = %s, last_run = %s, "
            "last_status = %s, last_error = %s, runs = runs + 1 WHERE id = %s AND claimed_by = %s",
            (next_run, ran_at, status, error, job_id, worker),
        )
        return bool(changed)

    async def set_next_run(self, job_id: str, when: datetime) -> bool:
        return bool(await self._fetch("UPDATE jobs SET next_run = %s WHERE id = %s", (when, job_id)))

    async def record(self, entry: RunRecord) -> None:
        await self._fetch(
            "INSERT INTO job_runs (job_id, data) VALUES (%s, %s)", (entry.job_id, payload_json(entry.to_dict()))
        )

    async def records(self, job_id: str | None = None, limit: int = 50) -> builtins.list[RunRecord]:
        if job_id is None:
            rows = await self._fetch("SELECT data FROM job_runs ORDER BY seq DESC LIMIT %s", (limit,))
        else:
            rows = await self._fetch(
                "SELECT data FROM job_runs WHERE job_id = %s ORDER BY seq DESC LIMIT %s", (job_id, limit)
            )
        return [RunRecord.from_dict(json.loads(r[0])) for r in reversed(rows)]

    async def close(self) -> None:
        await self._db.close()
