-- Threads bound to their graph, a thread lease instead of a session advisory lock,
-- worker heartbeats, task claims and errors on the barrier rows, and resumes that
-- name the run whose pause they answer.

-- A thread belongs to the graph that ran it first: a run or resume under another graph
-- name is refused. lease_holder is the worker coordinating the thread right now; the
-- lease is void once that worker's heartbeat is stale, so no connection is held for it.
CREATE TABLE graphruntime_threads (
    thread_id    text PRIMARY KEY,
    graph        text NOT NULL,
    lease_holder text,
    leased_at    timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
INSERT INTO graphruntime_threads (thread_id, graph, created_at)
SELECT DISTINCT ON (thread_id) thread_id, graph, created_at
FROM graphruntime_runs
ORDER BY thread_id, created_at;

-- One row per worker process; a process whose heartbeat is older than twice the
-- heartbeat interval is dead: its claimed tasks and thread leases are taken over.
CREATE TABLE graphruntime_workers (
    worker       text PRIMARY KEY,
    hostname     text NOT NULL,
    pid          integer NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- A resume answers the pause of the run before it; one resume per paused run.
DROP INDEX IF EXISTS graphruntime_runs_one_resume;
ALTER TABLE graphruntime_runs DROP COLUMN resumes_checkpoint;
ALTER TABLE graphruntime_runs ADD COLUMN resumes_run uuid;
CREATE UNIQUE INDEX graphruntime_runs_one_resume
    ON graphruntime_runs (thread_id, resumes_run) WHERE resumes_run IS NOT NULL;
-- A digest of the request, so the same idempotency key with another request is refused.
ALTER TABLE graphruntime_runs ADD COLUMN request_digest text;
-- Where the run came from (client, cli, queue), who asked, and a queue message to
-- dead-letter if the run is refused.
ALTER TABLE graphruntime_runs ADD COLUMN origin jsonb;
CREATE INDEX graphruntime_runs_thread_order ON graphruntime_runs (thread_id, created_at);

-- Task claims: the worker running a task; hold_until keeps the sweeper off a task that
-- waits out its retry backoff. A node's error, as the client rebuilds it.
ALTER TABLE graphruntime_step_tasks ADD COLUMN claimed_at timestamptz;
-- Which execution of its worker claimed it: a worker's heartbeat frees the claims its
-- current job does not hold (a job that gave up, to be retried anywhere).
ALTER TABLE graphruntime_step_tasks ADD COLUMN claim_token text;
CREATE INDEX graphruntime_step_tasks_claims
    ON graphruntime_step_tasks (worker) WHERE status = 'dispatched' AND worker IS NOT NULL;
ALTER TABLE graphruntime_step_tasks RENAME COLUMN lease_until TO hold_until;
ALTER TABLE graphruntime_step_tasks ADD COLUMN error jsonb;
