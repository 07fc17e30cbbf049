-- Named queries of graphrun serve (workers/api), loaded by workers/api/schema.py: each
-- starts at a "-- name: <name>" line and runs to the next one. Always parameterized.
-- They read the workers' tables (runs, threads, the inbox) and write only the API's own.

-- name: ensure_assistant
-- A graph's system assistant (and its first version); nothing if it exists.
WITH made AS (
    INSERT INTO graphruntime_api_assistants
        (assistant_id, graph_id, name, description, config, context, metadata)
    VALUES (%(assistant_id)s, %(graph_id)s, %(name)s, %(description)s, %(config)s,
            %(context)s, %(metadata)s)
    ON CONFLICT (assistant_id) DO NOTHING
    RETURNING *
)
INSERT INTO graphruntime_api_assistant_versions
    (assistant_id, version, graph_id, name, description, config, context, metadata)
SELECT assistant_id, version, graph_id, name, description, config, context, metadata
FROM made
RETURNING assistant_id;

-- name: get_assistant
SELECT * FROM graphruntime_api_assistants WHERE assistant_id = %(assistant_id)s;

-- name: search_assistants
-- Run unprepared: the NULL conditions fold away. {order} is filled in by the caller.
SELECT * FROM graphruntime_api_assistants
WHERE (%(graph_id)s::text IS NULL OR graph_id = %(graph_id)s)
  AND (%(metadata)s::jsonb IS NULL OR metadata @> %(metadata)s::jsonb)
  AND (%(name)s::text IS NULL OR name ILIKE '%%' || %(name)s || '%%')
ORDER BY {order}
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_assistants
SELECT count(*) AS n FROM graphruntime_api_assistants
WHERE (%(graph_id)s::text IS NULL OR graph_id = %(graph_id)s)
  AND (%(metadata)s::jsonb IS NULL OR metadata @> %(metadata)s::jsonb)
  AND (%(name)s::text IS NULL OR name ILIKE '%%' || %(name)s || '%%');

-- name: update_assistant
-- A new version with the given fields (NULL keeps the current one), made the latest.
WITH current AS (
    SELECT * FROM graphruntime_api_assistants WHERE assistant_id = %(assistant_id)s FOR UPDATE
), version AS (
    INSERT INTO graphruntime_api_assistant_versions
        (assistant_id, version, graph_id, name, description, config, context, metadata)
    SELECT c.assistant_id,
           (SELECT max(v.version) FROM graphruntime_api_assistant_versions v
            WHERE v.assistant_id = c.assistant_id) + 1,
           coalesce(%(graph_id)s, c.graph_id), coalesce(%(name)s, c.name),
           coalesce(%(description)s, c.description), coalesce(%(config)s::jsonb, c.config),
           coalesce(%(context)s::jsonb, c.context),
           c.metadata || coalesce(%(metadata)s::jsonb, '{}')
    FROM current c
    RETURNING *
)
UPDATE graphruntime_api_assistants a
SET version = v.version, graph_id = v.graph_id, name = v.name, description = v.description,
    config = v.config, context = v.context, metadata = v.metadata, updated_at = now()
FROM version v WHERE a.assistant_id = v.assistant_id
RETURNING a.*;

-- name: set_assistant_version
UPDATE graphruntime_api_assistants a
SET version = v.version, graph_id = v.graph_id, name = v.name, description = v.description,
    config = v.config, context = v.context, metadata = v.metadata, updated_at = now()
FROM graphruntime_api_assistant_versions v
WHERE a.assistant_id = %(assistant_id)s AND v.assistant_id = a.assistant_id
  AND v.version = %(version)s
RETURNING a.*;

-- name: assistant_versions
SELECT * FROM graphruntime_api_assistant_versions
WHERE assistant_id = %(assistant_id)s
  AND (%(metadata)s::jsonb IS NULL OR metadata @> %(metadata)s::jsonb)
ORDER BY version DESC LIMIT %(limit)s OFFSET %(offset)s;

-- name: delete_assistant
WITH gone AS (
    DELETE FROM graphruntime_api_assistants WHERE assistant_id = %(assistant_id)s
    RETURNING assistant_id
), versions AS (
    DELETE FROM graphruntime_api_assistant_versions v USING gone
    WHERE v.assistant_id = gone.assistant_id
)
SELECT assistant_id FROM gone;

-- name: create_thread
-- A new thread; an existing (not deleted) one is returned untouched with made = false.
WITH made AS (
    INSERT INTO graphruntime_api_threads (thread_id, metadata, config)
    VALUES (%(thread_id)s, %(metadata)s, %(config)s)
    ON CONFLICT (thread_id) DO UPDATE
    SET metadata = EXCLUDED.metadata, config = EXCLUDED.config, created_at = now(),
        updated_at = now(), deleted_at = NULL
    WHERE graphruntime_api_threads.deleted_at IS NOT NULL
    RETURNING thread_id
)
SELECT thread_id, true AS made FROM made
UNION ALL
SELECT thread_id, false FROM graphruntime_api_threads
WHERE thread_id = %(thread_id)s AND NOT EXISTS (SELECT 1 FROM made);

-- name: threads_by_ids
-- The API's threads (and threads the workers ran that the API never created), in the
-- order of the ids; deleted ones left out.
SELECT ids.thread_id,
       coalesce(t.metadata, '{}') AS metadata,
       coalesce(t.config, '{}') AS config,
       coalesce(t.created_at, w.created_at) AS created_at,
       greatest(coalesce(t.updated_at, w.created_at),
                (SELECT max(r.updated_at) FROM graphruntime_runs r
                 WHERE r.thread_id = ids.thread_id)) AS updated_at,
       w.graph,
       graphruntime_api_thread_status(ids.thread_id) AS status,
       (SELECT r.error FROM graphruntime_runs r WHERE r.thread_id = ids.thread_id
        ORDER BY r.created_at DESC, r.run_id DESC LIMIT 1) AS last_error
FROM unnest(%(ids)s::text[]) WITH ORDINALITY AS ids(thread_id, pos)
LEFT JOIN graphruntime_api_threads t ON t.thread_id = ids.thread_id
LEFT JOIN graphruntime_threads w ON w.thread_id = ids.thread_id
WHERE (t.thread_id IS NOT NULL AND t.deleted_at IS NULL)
   OR (t.thread_id IS NULL AND w.thread_id IS NOT NULL)
ORDER BY ids.pos;

-- name: search_threads
-- Run unprepared. {order} is filled in by the caller.
SELECT t.thread_id FROM graphruntime_api_threads t
WHERE t.deleted_at IS NULL
  AND (%(metadata)s::jsonb IS NULL OR t.metadata @> %(metadata)s::jsonb)
  AND (%(ids)s::text[] IS NULL OR t.thread_id = ANY(%(ids)s::text[]))
  AND (%(status)s::text IS NULL OR graphruntime_api_thread_status(t.thread_id) = %(status)s)
ORDER BY {order}
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_threads
SELECT count(*) AS n FROM graphruntime_api_threads t
WHERE t.deleted_at IS NULL
  AND (%(metadata)s::jsonb IS NULL OR t.metadata @> %(metadata)s::jsonb)
  AND (%(ids)s::text[] IS NULL OR t.thread_id = ANY(%(ids)s::text[]))
  AND (%(status)s::text IS NULL OR graphruntime_api_thread_status(t.thread_id) = %(status)s);

-- name: search_interrupted_threads
-- Threads waiting on a human, newest wait first, from the inbox: each thread once
-- (its newest wait), so a page costs its rows, however many threads wait.
SELECT i.thread_id FROM graphruntime_interrupts i
LEFT JOIN graphruntime_api_threads t ON t.thread_id = i.thread_id
WHERE NOT EXISTS (SELECT 1 FROM graphruntime_interrupts j
                  WHERE j.thread_id = i.thread_id
                    AND (j.created_at, j.interrupt_id) > (i.created_at, i.interrupt_id))
  AND (t.deleted_at IS NULL)
  AND (%(graph)s::text IS NULL OR i.graph = %(graph)s)
  AND (%(metadata)s::jsonb IS NULL OR coalesce(t.metadata, '{}') @> %(metadata)s::jsonb)
  AND (%(ids)s::text[] IS NULL OR i.thread_id = ANY(%(ids)s::text[]))
ORDER BY i.created_at DESC, i.thread_id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_interrupted_threads
SELECT count(DISTINCT i.thread_id) AS n FROM graphruntime_interrupts i
LEFT JOIN graphruntime_api_threads t ON t.thread_id = i.thread_id
WHERE (t.deleted_at IS NULL)
  AND (%(graph)s::text IS NULL OR i.graph = %(graph)s)
  AND (%(metadata)s::jsonb IS NULL OR coalesce(t.metadata, '{}') @> %(metadata)s::jsonb)
  AND (%(ids)s::text[] IS NULL OR i.thread_id = ANY(%(ids)s::text[]));

-- name: update_thread
-- Merge metadata into a thread the workers may have run without the API.
INSERT INTO graphruntime_api_threads (thread_id, metadata)
VALUES (%(thread_id)s, %(metadata)s)
ON CONFLICT (thread_id) DO UPDATE
SET metadata = graphruntime_api_threads.metadata || EXCLUDED.metadata, updated_at = now()
WHERE graphruntime_api_threads.deleted_at IS NULL
RETURNING thread_id;

-- name: delete_thread
UPDATE graphruntime_api_threads SET deleted_at = now()
WHERE thread_id = %(thread_id)s AND deleted_at IS NULL
RETURNING thread_id;

-- name: delete_thread_runs
UPDATE graphruntime_api_runs SET deleted_at = now()
WHERE thread_id = %(thread_id)s AND deleted_at IS NULL;

-- name: insert_run
INSERT INTO graphruntime_api_runs
    (run_id, thread_id, assistant_id, metadata, kwargs, multitask_strategy, temporary)
VALUES (%(run_id)s, %(thread_id)s, %(assistant_id)s, %(metadata)s, %(kwargs)s,
        %(multitask_strategy)s, %(temporary)s)
ON CONFLICT (run_id) DO NOTHING
RETURNING *;

-- name: get_run
-- A run as the API shows it: the workers' row with what the API added (a cancel, a run
-- of its own on the workers, is not one of the API's runs).
SELECT r.run_id, r.thread_id, r.graph, r.status, r.created_at, r.updated_at, r.error,
       a.assistant_id, a.metadata, a.kwargs, a.multitask_strategy, a.temporary
FROM graphruntime_runs r
LEFT JOIN graphruntime_api_runs a ON a.run_id = r.run_id
WHERE r.run_id = %(run_id)s AND r.kind <> 'cancel' AND a.deleted_at IS NULL;

-- name: list_runs
SELECT r.run_id, r.thread_id, r.graph, r.status, r.created_at, r.updated_at, r.error,
       a.assistant_id, a.metadata, a.kwargs, a.multitask_strategy, a.temporary
FROM graphruntime_runs r
LEFT JOIN graphruntime_api_runs a ON a.run_id = r.run_id
WHERE r.thread_id = %(thread_id)s AND r.kind <> 'cancel' AND a.deleted_at IS NULL
  AND (%(status)s::text[] IS NULL OR r.status = ANY(%(status)s::text[]))
ORDER BY r.created_at DESC, r.run_id DESC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: delete_run
-- Hide a finished run (a run the API did not make gets a row to say so).
INSERT INTO graphruntime_api_runs (run_id, thread_id, assistant_id, deleted_at)
SELECT r.run_id, r.thread_id, '00000000-0000-0000-0000-000000000000', now()
FROM graphruntime_runs r WHERE r.run_id = %(run_id)s
ON CONFLICT (run_id) DO UPDATE SET deleted_at = now()
RETURNING run_id;

-- name: prune_runs_of_thread
UPDATE graphruntime_api_runs SET deleted_at = now()
WHERE thread_id = %(thread_id)s AND deleted_at IS NULL;

-- name: add_webhook
INSERT INTO graphruntime_api_webhooks (run_id, url) VALUES (%(run_id)s, %(url)s)
ON CONFLICT (run_id) DO NOTHING;

-- name: due_webhooks
-- Deliveries whose run ended and whose next attempt is due; each taken by one sender
-- (the row stays locked until the caller records the attempt).
SELECT w.run_id, w.url, w.attempts FROM graphruntime_api_webhooks w
JOIN graphruntime_runs r ON r.run_id = w.run_id
WHERE w.delivered_at IS NULL AND w.next_attempt_at <= now() AND w.attempts < %(max_attempts)s
  AND r.status IN ('interrupted', 'success', 'error', 'cancelled')
ORDER BY w.next_attempt_at LIMIT %(limit)s
FOR UPDATE OF w SKIP LOCKED;

-- name: webhook_attempted
UPDATE graphruntime_api_webhooks
SET attempts = attempts + 1,
    delivered_at = CASE WHEN %(delivered)s THEN now() END,
    last_error = %(error)s,
    next_attempt_at = now() + make_interval(secs => %(backoff)s)
WHERE run_id = %(run_id)s;

-- name: create_cron
INSERT INTO graphruntime_api_crons
    (cron_id, assistant_id, thread_id, schedule, payload, metadata, end_time, next_run_at,
     user_id)
VALUES (%(cron_id)s, %(assistant_id)s, %(thread_id)s, %(schedule)s, %(payload)s,
        %(metadata)s, %(end_time)s, %(next_run_at)s, %(user_id)s)
RETURNING *;

-- name: search_crons
-- Run unprepared. {order} is filled in by the caller.
SELECT * FROM graphruntime_api_crons
WHERE (%(assistant_id)s::uuid IS NULL OR assistant_id = %(assistant_id)s)
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
ORDER BY {order}
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_crons
SELECT count(*) AS n FROM graphruntime_api_crons
WHERE (%(assistant_id)s::uuid IS NULL OR assistant_id = %(assistant_id)s)
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s);

-- name: get_cron
SELECT * FROM graphruntime_api_crons WHERE cron_id = %(cron_id)s;

-- name: update_cron
UPDATE graphruntime_api_crons
SET schedule = coalesce(%(schedule)s, schedule),
    next_run_at = coalesce(%(next_run_at)s, next_run_at),
    end_time = coalesce(%(end_time)s, end_time),
    payload = payload || coalesce(%(payload)s::jsonb, '{}'),
    metadata = metadata || coalesce(%(metadata)s::jsonb, '{}'),
    updated_at = now()
WHERE cron_id = %(cron_id)s
RETURNING *;

-- name: delete_cron
DELETE FROM graphruntime_api_crons WHERE cron_id = %(cron_id)s RETURNING cron_id;

-- name: due_crons
-- Crons whose time came; each taken by one sweeper (locked until it moves them on).
SELECT * FROM graphruntime_api_crons
WHERE next_run_at <= now() AND (end_time IS NULL OR end_time > now())
ORDER BY next_run_at LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: cron_fired
UPDATE graphruntime_api_crons SET next_run_at = %(next_run_at)s, updated_at = now()
WHERE cron_id = %(cron_id)s;

-- name: ended_temporary_runs
-- Stateless runs that ended whose thread is still there (deleted by the sweeper).
SELECT a.run_id, a.thread_id FROM graphruntime_api_runs a
JOIN graphruntime_runs r ON r.run_id = a.run_id
JOIN graphruntime_api_threads t ON t.thread_id = a.thread_id
WHERE a.temporary AND t.deleted_at IS NULL
  AND r.status IN ('interrupted', 'success', 'error', 'cancelled')
LIMIT %(limit)s;

-- name: resume_check
-- What a resume can answer on a thread: its pending waits (the inbox), whether a run is
-- under way (then the worker decides), and how its last run ended.
SELECT
    (SELECT array_agg(i.interrupt_id ORDER BY i.created_at, i.interrupt_id)
     FROM graphruntime_interrupts i WHERE i.thread_id = %(thread_id)s) AS pending,
    EXISTS (SELECT 1 FROM graphruntime_runs r
            WHERE r.thread_id = %(thread_id)s AND r.status IN ('queued', 'running')) AS busy,
    (SELECT r.status FROM graphruntime_runs r WHERE r.thread_id = %(thread_id)s
     ORDER BY r.created_at DESC, r.run_id DESC LIMIT 1) AS last_status;
