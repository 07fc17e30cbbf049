-- Which job holds a thread's lease: a worker's heartbeat frees the leases held under its
-- name that its current job does not hold (a release a crash took back, or one an outage
-- kept a job from making), as it frees task claims.
ALTER TABLE graphruntime_threads ADD COLUMN lease_token text;
CREATE INDEX graphruntime_threads_leases
    ON graphruntime_threads (lease_holder) WHERE lease_holder IS NOT NULL;

-- A cancel is recorded as a run of its own (kind 'cancel', status 'cancelled'): who
-- cancelled and why, and the thread's latest run then says it waits for nothing.
ALTER TABLE graphruntime_runs DROP CONSTRAINT graphruntime_runs_kind_check;
ALTER TABLE graphruntime_runs ADD CONSTRAINT graphruntime_runs_kind_check
    CHECK (kind IN ('input', 'command', 'resume', 'cancel'));
