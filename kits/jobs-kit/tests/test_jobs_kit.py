"""crab-jobs-kit: a job is JSON data that a SQL row holds and gives back whole, times in aware UTC."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta, timezone

import pytest
from crab_jobs_kit import (
    JOB_COLUMNS,
    Job,
    Origin,
    RunRecord,
    Trigger,
    format_duration,
    format_time,
    job_from_row,
    new_job_id,
    parse_stored_time,
)

NOW = datetime(2026, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)


def _job() -> Job:
    origin = Origin("tool", session_id="s1", channel="telegram", address="42", workspace="/w")
    trigger = Trigger("cron", timezone="Europe/Berlin", cron="0 9 * * 1-5")
    return Job(new_job_id(), trigger, "agent", "summarise the news", origin, "read-only", NOW, NOW, name="news")


def _to_time(value: str | None) -> datetime | None:
    return parse_stored_time(value) if value is not None else None


def test_a_job_round_trips_through_a_sqlite_row():
    job = _job().with_run(claimed_by="w1", lease_until=NOW + timedelta(minutes=5), runs=3, last_status="ok")
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE jobs ({JOB_COLUMNS})")
    times = [format_time(t) if t else None for t in (job.created, job.next_run, job.lease_until, job.last_run)]
    db.execute(
        f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (job.id, json.dumps(job.spec()), times[0], times[1], job.claimed_by, times[2], times[3], "ok", None, 3),
    )
    assert job_from_row(db.execute(f"SELECT {JOB_COLUMNS} FROM jobs").fetchone(), _to_time) == job
    assert job.origin.destination == "telegram:42"
    assert Origin("cli").destination == "log"


def test_a_row_without_a_created_time_is_refused():
    with pytest.raises(ValueError, match="job 'j1' has no created time"):
        job_from_row(("j1", json.dumps(_job().spec()), None, None, None, None, None, None, None, 0), _to_time)


def test_stored_times_sort_as_they_compare_and_read_back_in_utc():
    later = NOW.astimezone(UTC) + timedelta(microseconds=1)
    assert format_time(NOW) < format_time(later)
    assert parse_stored_time(format_time(NOW)) == NOW
    east = NOW.astimezone(timezone(timedelta(hours=5)))  # another offset, the same instant
    assert format_time(east) == format_time(NOW) and format_time(east).endswith("Z")


def test_triggers_and_run_records_are_plain_json():
    every = Trigger("every", every=5400, start=NOW)
    assert Trigger.from_dict(json.loads(json.dumps(every.to_dict()))) == every
    assert every.describe() == "every 1h30m"
    record = RunRecord("j1", NOW, "undelivered", "telegram:42", text="hi", error="chat gone", worker="w1")
    assert RunRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert [format_duration(s) for s in (7200, 90, 86400 + 1)] == ["2h", "1m30s", "1d1s"]
    assert len({new_job_id() for _ in range(100)}) == 100
