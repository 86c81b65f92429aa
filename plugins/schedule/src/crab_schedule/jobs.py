"""Jobs as plain data and the job store interface: crab-jobs-kit's (``crab_jobs_kit``).

Re-exported here so crab-schedule's modules keep one import place; back-ends other than SQLite
live in other plugins (``crab_job_stores``) and import them from ``crab_jobs_kit``.
"""

from __future__ import annotations

from crab_jobs_kit import Job, JobStore, Mode, Origin, RunRecord, Status, job_from_spec, new_job_id

__all__ = ["Job", "JobStore", "Mode", "Origin", "RunRecord", "Status", "job_from_spec", "new_job_id"]
