"""Jobs as plain data and the job store interface: now core's public API (``crab.jobs``).

Re-exported here so crab-schedule's modules keep one import place; back-ends other than SQLite
live in other plugins (``crab_job_stores``) and import them from ``crab.jobs``.
"""

from __future__ import annotations

from crab.jobs import Job, JobStore, Mode, Origin, RunRecord, Status, job_from_spec, new_job_id

__all__ = ["Job", "JobStore", "Mode", "Origin", "RunRecord", "Status", "job_from_spec", "new_job_id"]
