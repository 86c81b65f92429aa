-- crab-schedule's jobs and its schedule log (the job store interface, crab.JobStore).
CREATE TABLE jobs (
    id text PRIMARY KEY,
    spec text NOT NULL,               -- the job's fixed part (Job.spec()), JSON
    created timestamptz NOT NULL,
    next_run timestamptz,             -- NULL: it will not run again
    claimed_by text,                  -- the worker running it now
    lease_until timestamptz,          -- that claim runs out here unless extended
    last_run timestamptz,
    last_status text,
    last_error text,
    runs integer NOT NULL DEFAULT 0
);
CREATE INDEX jobs_due ON jobs (next_run) WHERE next_run IS NOT NULL;

CREATE TABLE job_runs (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id text NOT NULL,
    data text NOT NULL                -- RunRecord.to_dict(), JSON
);
CREATE INDEX job_runs_by_job ON job_runs (job_id, seq);
