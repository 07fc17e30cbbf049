-- The inbox (every pending interrupt of every thread, one row each), cancelled runs.

-- Replaced for a thread in the transaction that ends each of its runs (and by edits,
-- cancels and deadlines), so it always shows what the thread's checkpoint waits on.
-- value: the interrupt's value as JSON (what the serde stores), queried by containment.
CREATE TABLE graphruntime_interrupts (
    thread_id     text NOT NULL,
    interrupt_id  text NOT NULL,
    graph         text NOT NULL,
    run_id        uuid NOT NULL,
    checkpoint_id text NOT NULL,
    node          text NOT NULL,
    namespace     text NOT NULL,
    value         jsonb NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    deadline      timestamptz,
    default_type  text,
    default_value bytea,
    PRIMARY KEY (thread_id, interrupt_id)
);
-- Pages of one graph's inbox, oldest first (keyset: created_at, thread_id, interrupt_id).
CREATE INDEX graphruntime_interrupts_page
    ON graphruntime_interrupts (graph, created_at, thread_id, interrupt_id);
CREATE INDEX graphruntime_interrupts_all
    ON graphruntime_interrupts (created_at, thread_id, interrupt_id);
-- Filters on the value's fields: {"team": "ops"} is value @> '{"team": "ops"}'.
CREATE INDEX graphruntime_interrupts_value
    ON graphruntime_interrupts USING gin (value jsonb_path_ops);
CREATE INDEX graphruntime_interrupts_deadline
    ON graphruntime_interrupts (deadline) WHERE deadline IS NOT NULL;

-- A cancelled run ends with status 'cancelled'; its reason and who asked are in error.
ALTER TABLE graphruntime_runs DROP CONSTRAINT graphruntime_runs_status_check;
ALTER TABLE graphruntime_runs ADD CONSTRAINT graphruntime_runs_status_check
    CHECK (status IN ('queued', 'running', 'interrupted', 'success', 'error', 'cancelled'));
-- Resume runs of a thread, newest first (the audit trail).
CREATE INDEX graphruntime_runs_resumes
    ON graphruntime_runs (thread_id, created_at DESC) WHERE kind = 'resume';
-- Runs by idempotency key across threads (a bulk resume's key names many threads' runs).
CREATE INDEX graphruntime_runs_key
    ON graphruntime_runs (idempotency_key) WHERE idempotency_key IS NOT NULL;
