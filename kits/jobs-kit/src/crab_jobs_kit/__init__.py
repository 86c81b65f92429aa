"""crab-jobs-kit: scheduled jobs as plain data and the ``JobStore`` interface every job store implements.

crab-schedule runs jobs (and keeps them in SQLite by default); crab-store-postgres offers a
PostgreSQL job store through crab-schedule's ``crab_job_stores`` hook. Both import what a job is
from here, so neither imports the other and core holds none of it. A kit, not a plugin: no entry
point. It was ``crab.jobs`` once; that path is gone.
"""

from __future__ import annotations

from crab_jobs_kit._jobs import (
    JOB_COLUMNS,
    Job,
    JobStore,
    Mode,
    Origin,
    RunRecord,
    Status,
    Trigger,
    TriggerKind,
    format_duration,
    format_time,
    job_from_row,
    job_from_spec,
    new_job_id,
    parse_stored_time,
)

__all__ = [
    "JOB_COLUMNS",
    "Job",
    "JobStore",
    "Mode",
    "Origin",
    "RunRecord",
    "Status",
    "Trigger",
    "TriggerKind",
    "format_duration",
    "format_time",
    "job_from_row",
    "job_from_spec",
    "new_job_id",
    "parse_stored_time",
]
