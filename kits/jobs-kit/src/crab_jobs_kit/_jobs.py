"""Scheduled jobs as plain data, and the job store interface every back-end implements.

A job is JSON-able data: no pickles, no callables. The interface speaks aware UTC datetimes and
string ids and assumes nothing local (no file, no process, no clock of its own): the time is
always passed in, and a claim is a lease held by a named worker, so a database-backed queue
(``SELECT … FOR UPDATE SKIP LOCKED``) implements the same methods. crab-schedule runs jobs and
keeps them in SQLite by default; a plugin offers another store through crab-schedule's ``crab_job_stores``
(crab-store-postgres: ``postgres``), chosen with ``[plugins.schedule] store``.
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

TriggerKind = Literal["cron", "every", "once"]
Kind = TriggerKind


@dataclass(frozen=True, slots=True)
class Trigger:
    """When a job fires: ``cron`` (expression in ``timezone``), ``every`` (seconds from ``start``)
    or ``once`` (at ``start``). ``start`` is aware UTC."""

    kind: TriggerKind
    timezone: str = "UTC"
    cron: str | None = None
    every: float | None = None
    start: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "timezone": self.timezone,
            "cron": self.cron,
            "every": self.every,
            "start": format_time(self.start) if self.start else None,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trigger:
        start = data.get("start")
        return cls(
            kind=data["kind"],
            timezone=data.get("timezone") or "UTC",
            cron=data.get("cron"),
            every=data.get("every"),
            start=parse_stored_time(start) if start else None,
        )

    def describe(self) -> str:
        """One short phrase for lists: ``cron "0 9 * * 1-5" Europe/Berlin``, ``every 2h``."""
        if self.kind == "cron":
            return f'cron "{self.cron}" {self.timezone}'
        if self.kind == "every":
            return f"every {format_duration(self.every or 0)}"
        return f"once at {format_time(self.start) if self.start else '?'}"


def format_time(when: datetime) -> str:
    """Fixed-width UTC ISO text: sorts as it compares (what the job store keeps)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stored_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def format_duration(seconds: float) -> str:
    """``7200`` → ``2h``, ``5400`` → ``1h30m``, ``90`` → ``1m30s``."""
    left = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts) or "0s"


Mode = Literal["reminder", "agent"]
Status = Literal["ok", "error", "missed", "undelivered"]


def new_job_id() -> str:
    return secrets.token_hex(5)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a job came from, so its output goes back there.

    ``channel``/``address``: the conversation of a channel (a Telegram chat) whose session added
    it; both None for a terminal session (``crab run``/``chat``) or the CLI: output goes to the
    schedule log. ``session_id``: the session that added it (None from the CLI). ``source``:
    ``tool`` or ``cli``.
    """

    source: str
    session_id: str | None = None
    channel: str | None = None
    address: str | None = None
    workspace: str | None = None

    @property
    def destination(self) -> str:
        """``telegram:123`` or ``log``."""
        return f"{self.channel}:{self.address}" if self.channel and self.address is not None else "log"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "session_id": self.session_id,
            "channel": self.channel,
            "address": self.address,
            "workspace": self.workspace,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Origin:
        return cls(
            source=str(data.get("source") or "cli"),
            session_id=data.get("session_id"),
            channel=data.get("channel"),
            address=data.get("address"),
            workspace=data.get("workspace"),
        )


@dataclass(frozen=True, slots=True)
class Job:
    """One scheduled job. ``text`` is the reminder's message or the agent job's prompt.
    ``permissions`` is the permission mode of the session that added it (``ask``, ``yolo``,
    ``read-only``): an agent job never runs with more. ``next_run`` None: it will not run again.
    ``timeout``: seconds its agent turn may run (None: the runner's default)."""

    id: str
    trigger: Trigger
    mode: Mode
    text: str
    origin: Origin
    permissions: str
    created: datetime
    next_run: datetime | None
    name: str = ""
    claimed_by: str | None = None
    lease_until: datetime | None = None
    last_run: datetime | None = None
    last_status: str | None = None
    last_error: str | None = None
    runs: int = 0
    timeout: float | None = None

    def spec(self) -> dict[str, Any]:
        """The job's fixed part, as a JSON object (what a store keeps in one column)."""
        spec: dict[str, Any] = {
            "trigger": self.trigger.to_dict(),
            "mode": self.mode,
            "text": self.text,
            "name": self.name,
            "origin": self.origin.to_dict(),
            "permissions": self.permissions,
        }
        if self.timeout is not None:  # absent when unset: specs stored before it existed stay equal
            spec["timeout"] = self.timeout
        return spec

    def with_run(self, **changes: Any) -> Job:
        return replace(self, **changes)


def job_from_spec(
    job_id: str,
    spec: dict[str, Any],
    *,
    created: datetime,
    next_run: datetime | None,
    claimed_by: str | None = None,
    lease_until: datetime | None = None,
    last_run: datetime | None = None,
    last_status: str | None = None,
    last_error: str | None = None,
    runs: int = 0,
) -> Job:
    return Job(
        id=job_id,
        trigger=Trigger.from_dict(spec["trigger"]),
        mode=spec["mode"],
        text=spec["text"],
        name=spec.get("name") or "",
        origin=Origin.from_dict(spec.get("origin") or {}),
        permissions=spec.get("permissions") or "ask",
        created=created,
        next_run=next_run,
        claimed_by=claimed_by,
        lease_until=lease_until,
        last_run=last_run,
        last_status=last_status,
        last_error=last_error,
        runs=runs,
        timeout=spec.get("timeout"),
    )


JOB_COLUMNS = "id, spec, created, next_run, claimed_by, lease_until, last_run, last_status, last_error, runs"
"""A job row's columns, in the order ``job_from_row`` reads them (``spec`` is ``Job.spec()`` as JSON text)."""


def job_from_row(row: Any, to_time: Callable[[Any], datetime | None]) -> Job:
    """A ``Job`` from a row of ``JOB_COLUMNS``; ``to_time`` turns a stored time (or NULL) into aware UTC.

    Raises ``ValueError`` when the row has no ``created`` time.
    """
    import json

    created = to_time(row[2])
    if created is None:
        raise ValueError(f"job {row[0]!r} has no created time")
    return job_from_spec(
        row[0],
        json.loads(row[1]),
        created=created,
        next_run=to_time(row[3]),
        claimed_by=row[4],
        lease_until=to_time(row[5]),
        last_run=to_time(row[6]),
        last_status=row[7],
        last_error=row[8],
        runs=int(row[9]),
    )


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One line of the schedule log: a run's outcome and where its text went."""

    job_id: str
    time: datetime
    status: Status
    destination: str
    text: str = ""
    error: str | None = None
    worker: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "job_id": self.job_id,
            "time": format_time(self.time),
            "status": self.status,
            "destination": self.destination,
            "text": self.text,
            "error": self.error,
            "worker": self.worker,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        return cls(
            job_id=data["job_id"],
            time=parse_stored_time(data["time"]),
            status=data["status"],
            destination=data["destination"],
            text=data.get("text") or "",
            error=data.get("error"),
            worker=data.get("worker") or "",
        )


class JobStore(Protocol):
    """Where jobs live. Every method is safe to call from several processes at once.

    - ``add(job)``: store a new job (its id is unique).
    - ``get(job_id)``, ``list(include_finished=False)``: read; ``list`` orders by next run.
    - ``remove(job_id)``: delete; True when it existed. A running job finishes its run.
    - ``due(now, limit)``: jobs whose ``next_run <= now`` and that no live lease holds.
    - ``claim(job_id, worker, now, lease)``: atomically take a due job for ``lease``; the job as
      claimed, or None when it is not due or another worker holds it (it then never runs twice).
    - ``extend(job_id, worker, until)``: keep a claim alive while a long run goes on.
    - ``finish(job_id, worker, ...)``: release the claim and record the run; ``next_run`` None
      means it will not run again. False when the claim was lost (the lease ran out).
    - ``set_next_run(job_id, when)``: make a job due at ``when`` (``crab schedule run-now``).
    - ``record(entry)``, ``records(job_id, limit)``: the schedule log, newest last.

    Optional: ``claim_due(worker, now, lease, limit)`` claims up to ``limit`` due jobs at once and
    returns them (crab-store-postgres: ``FOR UPDATE SKIP LOCKED``, so workers polling together
    take different jobs instead of racing for the same ones); crab-schedule uses it when present.
    """

    async def add(self, job: Job) -> None: ...

    async def get(self, job_id: str) -> Job | None: ...

    async def list(self, include_finished: bool = False) -> builtins.list[Job]: ...

    async def remove(self, job_id: str) -> bool: ...

    async def due(self, now: datetime, limit: int = 100) -> builtins.list[Job]: ...

    async def claim(self, job_id: str, worker: str, now: datetime, lease: timedelta) -> Job | None: ...

    async def extend(self, job_id: str, worker: str, until: datetime) -> bool: ...

    async def finish(
        self,
        job_id: str,
        worker: str,
        *,
        ran_at: datetime,
        status: Status,
        error: str | None,
        next_run: datetime | None,
    ) -> bool: ...

    async def set_next_run(self, job_id: str, when: datetime) -> bool: ...

    async def record(self, entry: RunRecord) -> None: ...

    async def records(self, job_id: str | None = None, limit: int = 50) -> builtins.list[RunRecord]: ...

    async def close(self) -> None: ...
