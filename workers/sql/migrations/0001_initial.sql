-- The workers' run bookkeeping: runs, the step barrier, stream events.
--
-- Version 1 is the schema that workers/sql/schema.sql created before the workers had
-- numbered migrations. It is written with IF NOT EXISTS throughout so that it also
-- applies to a database that old schema.sql already set up: there it changes nothing
-- and only records version 1. Later changes go in new files (0002_...), plain DDL.
--
-- Code older than these migrations serialized its schema.sql under the advisory lock
-- (4242, 1); taking it too keeps a not yet upgraded host's setup() from racing this.
SELECT pg_advisory_xact_lock(4242, 1);

CREATE TABLE IF NOT EXISTS graphruntime_runs (
    run_id            uuid PRIMARY KEY,
    thread_id         text NOT NULL,
    graph             text NOT NULL,
    status            text NOT NULL
        CHECK (status IN ('queued', 'running', 'interrupted', 'success', 'error')),
    kind              text NOT NULL CHECK (kind IN ('input', 'command', 'resume')),
    payload_type      text NOT NULL,
    payload           bytea NOT NULL,
    stop              integer,
    idempotency_key   text,
    resumes_checkpoint text,
    result_type       text,
    result            bytea,
    error             jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS graphruntime_runs_idempotency
    ON graphruntime_runs (thread_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- At most one resume per interrupted checkpoint: a racing second resume conflicts here.
CREATE UNIQUE INDEX IF NOT EXISTS graphruntime_runs_one_resume
    ON graphruntime_runs (thread_id, resumes_checkpoint) WHERE resumes_checkpoint IS NOT NULL;
CREATE INDEX IF NOT EXISTS graphruntime_runs_active
    ON graphruntime_runs (thread_id, created_at) WHERE status IN ('queued', 'running');
CREATE INDEX IF NOT EXISTS graphruntime_runs_status ON graphruntime_runs (status, updated_at);

-- The step barrier: one row per task of a step, counted in Postgres (not a Celery chord).
CREATE TABLE IF NOT EXISTS graphruntime_step_tasks (
    run_id        uuid NOT NULL,
    checkpoint_id text NOT NULL,
    task_id       text NOT NULL,
    thread_id     text NOT NULL,
    status        text NOT NULL CHECK (status IN ('dispatched', 'done')),
    attempts      integer NOT NULL DEFAULT 1,
    worker        text,
    dispatched_at timestamptz NOT NULL DEFAULT now(),
    done_at       timestamptz,
    -- A running task job holds a lease it renews; an expired lease means its worker died.
    started_at    timestamptz,
    lease_until   timestamptz,
    -- The task's path (PULL node name or PUSH index), so the sweeper can re-send it.
    task_path     jsonb,
    -- Failed attempts of the task's node that its RetryPolicy retries as new jobs.
    retry_attempts integer NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, checkpoint_id, task_id)
);
-- One row per dispatched step: how many of its tasks are still open (O(1) barrier check).
CREATE TABLE IF NOT EXISTS graphruntime_steps (
    run_id        uuid NOT NULL,
    checkpoint_id text NOT NULL,
    open_tasks    integer NOT NULL,
    PRIMARY KEY (run_id, checkpoint_id)
);
-- The columns an earlier schema.sql added later: a database it set up before them gets
-- them here (a no-op where they exist).
ALTER TABLE graphruntime_step_tasks ADD COLUMN IF NOT EXISTS started_at timestamptz;
ALTER TABLE graphruntime_step_tasks ADD COLUMN IF NOT EXISTS lease_until timestamptz;
ALTER TABLE graphruntime_step_tasks ADD COLUMN IF NOT EXISTS task_path jsonb;
ALTER TABLE graphruntime_step_tasks
    ADD COLUMN IF NOT EXISTS retry_attempts integer NOT NULL DEFAULT 0;

CREATE INDEX IF NOT EXISTS graphruntime_step_tasks_open
    ON graphruntime_step_tasks (dispatched_at) WHERE status = 'dispatched';

-- Stream chunks of a run, in order, for clients that stream or wait.
CREATE TABLE IF NOT EXISTS graphruntime_run_events (
    seq          bigserial PRIMARY KEY,
    run_id       uuid NOT NULL,
    ns           text NOT NULL,
    mode         text NOT NULL,
    payload_type text NOT NULL,
    payload      bytea NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS graphruntime_run_events_run ON graphruntime_run_events (run_id, seq);
