-- graphrun serve's own tables (the LangGraph Server API): assistants, thread metadata,
-- the API's view of runs, crons and webhook deliveries. Runs, threads' graphs, the inbox
-- and stream events stay in the workers' tables; these only add what the API shows.

-- Assistants: named configs of a graph. A graph's system assistant (id uuid5 of the
-- graph id) is inserted by the server at start.
CREATE TABLE graphruntime_api_assistants (
    assistant_id uuid PRIMARY KEY,
    graph_id     text NOT NULL,
    name         text NOT NULL,
    description  text,
    config       jsonb NOT NULL DEFAULT '{}',
    context      jsonb NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    version      integer NOT NULL DEFAULT 1,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graphruntime_api_assistants_graph ON graphruntime_api_assistants (graph_id);
CREATE INDEX graphruntime_api_assistants_recent
    ON graphruntime_api_assistants (created_at DESC, assistant_id);
CREATE INDEX graphruntime_api_assistants_metadata
    ON graphruntime_api_assistants USING gin (metadata jsonb_path_ops);

CREATE TABLE graphruntime_api_assistant_versions (
    assistant_id uuid NOT NULL,
    version      integer NOT NULL,
    graph_id     text NOT NULL,
    name         text NOT NULL,
    description  text,
    config       jsonb NOT NULL DEFAULT '{}',
    context      jsonb NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (assistant_id, version)
);

-- Threads as the API knows them: metadata and config. Their graph, runs, checkpoints
-- and pending interrupts are the workers'.
CREATE TABLE graphruntime_api_threads (
    thread_id  text PRIMARY KEY,
    metadata   jsonb NOT NULL DEFAULT '{}',
    config     jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graphruntime_api_threads_recent
    ON graphruntime_api_threads (created_at DESC, thread_id);
CREATE INDEX graphruntime_api_threads_metadata
    ON graphruntime_api_threads USING gin (metadata jsonb_path_ops);

-- What the API adds to a workers' run: its assistant, metadata, request and strategy.
CREATE TABLE graphruntime_api_runs (
    run_id             uuid PRIMARY KEY,
    thread_id          text NOT NULL,
    assistant_id       uuid NOT NULL,
    metadata           jsonb NOT NULL DEFAULT '{}',
    kwargs             jsonb NOT NULL DEFAULT '{}',
    multitask_strategy text NOT NULL DEFAULT 'enqueue',
    -- a stateless run's thread, deleted when the run ends (on_completion = delete)
    temporary          boolean NOT NULL DEFAULT false,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graphruntime_api_runs_thread ON graphruntime_api_runs (thread_id, created_at DESC);
CREATE INDEX graphruntime_api_runs_temporary ON graphruntime_api_runs (created_at)
    WHERE temporary;

-- Crons: a schedule that starts a run; next_run_at moves on in the statement that
-- fires it, so any number of sweepers fire each time once.
CREATE TABLE graphruntime_api_crons (
    cron_id      uuid PRIMARY KEY,
    assistant_id uuid NOT NULL,
    thread_id    text,
    schedule     text NOT NULL,
    payload      jsonb NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    end_time     timestamptz,
    next_run_at  timestamptz NOT NULL,
    user_id      text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graphruntime_api_crons_due ON graphruntime_api_crons (next_run_at);

-- Webhooks: one delivery per run that asked for one, retried with backoff until done.
CREATE TABLE graphruntime_api_webhooks (
    run_id          uuid PRIMARY KEY,
    url             text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX graphruntime_api_webhooks_due ON graphruntime_api_webhooks (next_attempt_at)
    WHERE delivered_at IS NULL;

-- A deleted thread or run is hidden from the API (its checkpoints are deleted; the
-- workers' rows stay, as their audit trail).
ALTER TABLE graphruntime_api_threads ADD COLUMN deleted_at timestamptz;
ALTER TABLE graphruntime_api_runs ADD COLUMN deleted_at timestamptz;

-- A thread's status as the API shows it: busy while a run is queued or running,
-- interrupted while the inbox has a wait of it, error when its last run failed.
CREATE FUNCTION graphruntime_api_thread_status(thread text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN EXISTS (SELECT 1 FROM graphruntime_runs r
                     WHERE r.thread_id = thread AND r.status IN ('queued', 'running'))
            THEN 'busy'
        WHEN EXISTS (SELECT 1 FROM graphruntime_interrupts i WHERE i.thread_id = thread)
            THEN 'interrupted'
        WHEN (SELECT r.status FROM graphruntime_runs r WHERE r.thread_id = thread
              ORDER BY r.created_at DESC, r.run_id DESC LIMIT 1) = 'error'
            THEN 'error'
        ELSE 'idle'
    END
$$;
