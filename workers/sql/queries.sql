-- name: insert_run
INSERT INTO graphruntime_runs
    (run_id, thread_id, graph, status, kind, payload_type, payload, idempotency_key,
     resumes_checkpoint)
VALUES (%(run_id)s, %(thread_id)s, %(graph)s, 'queued', %(kind)s, %(payload_type)s,
        %(payload)s, %(idempotency_key)s, %(resumes_checkpoint)s)
ON CONFLICT DO NOTHING
RETURNING run_id;

-- name: run_by_idempotency_key
SELECT * FROM graphruntime_runs WHERE thread_id = %(thread_id)s AND idempotency_key = %(key)s;

-- name: run_by_resumed_checkpoint
SELECT * FROM graphruntime_runs
WHERE thread_id = %(thread_id)s AND resumes_checkpoint = %(checkpoint_id)s;

-- name: get_run
SELECT * FROM graphruntime_runs WHERE run_id = %(run_id)s;

-- name: earlier_active_run
SELECT run_id FROM graphruntime_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running')
  AND (created_at, run_id) < (%(created_at)s, %(run_id)s)
ORDER BY created_at LIMIT 1;

-- name: active_runs_of_thread
SELECT run_id FROM graphruntime_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running');

-- name: set_running
UPDATE graphruntime_runs SET status = 'running', stop = %(stop)s, updated_at = now()
WHERE run_id = %(run_id)s AND status = 'queued';

-- name: touch_run
UPDATE graphruntime_runs SET updated_at = now() WHERE run_id = %(run_id)s;

-- name: finish_run
-- One row (rowcount 1) when this call finished the run. Waiting clients LISTEN on
-- graphruntime_runs; the notification (payload: the run id) is delivered at commit.
WITH done AS (
    UPDATE graphruntime_runs
    SET status = %(status)s, result_type = %(result_type)s, result = %(result)s,
        error = %(error)s, updated_at = now()
    WHERE run_id = %(run_id)s AND status IN ('queued', 'running')
    RETURNING run_id
)
SELECT pg_notify('graphruntime_runs', run_id::text) FROM done;

-- name: register_tasks
WITH new AS (
    INSERT INTO graphruntime_step_tasks
        (run_id, checkpoint_id, task_id, thread_id, status, task_path)
    SELECT %(run_id)s, %(checkpoint_id)s, t.id, %(thread_id)s, 'dispatched', t.path::jsonb
    FROM unnest(%(task_ids)s::text[], %(paths)s::text[]) AS t(id, path)
    ON CONFLICT DO NOTHING
    RETURNING task_id
), counted AS (
    INSERT INTO graphruntime_steps (run_id, checkpoint_id, open_tasks)
    SELECT %(run_id)s, %(checkpoint_id)s, count(*) FROM new
    ON CONFLICT (run_id, checkpoint_id)
    DO UPDATE SET open_tasks = graphruntime_steps.open_tasks + EXCLUDED.open_tasks
)
SELECT task_id FROM new;

-- name: complete_task
-- One row by its whole key, run once per task (pipelined): `task_id = ANY(ids)` would be
-- planned as a filter over every task of the step (the planner expects one row per step),
-- which makes a 10,000-task fan-out quadratic. `status <> 'done'` (the only other status)
-- rather than `= 'dispatched'`: the latter lets the planner pick the partial index of open
-- tasks, which statistics from a quiet moment call tiny, and scan all open tasks of a big
-- step for every row (22 s of Postgres CPU per 10,000-task fan-out instead of 2).
UPDATE graphruntime_step_tasks SET status = 'done', done_at = now(), worker = %(worker)s
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s
  AND status <> 'done'
RETURNING task_id;

-- name: step_task_states
SELECT task_id, status FROM graphruntime_step_tasks
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s;

-- name: count_down_step
UPDATE graphruntime_steps SET open_tasks = open_tasks - %(done)s
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s
RETURNING open_tasks;

-- name: async_commit
-- Leases are soft state (a lost one only delays a re-send): no WAL flush wait.
SET LOCAL synchronous_commit TO OFF;

-- name: claim_task
-- Starts the lease of one of the message's tasks if it is still open (see complete_task).
UPDATE graphruntime_step_tasks
SET started_at = now(), lease_until = now() + make_interval(secs => %(lease)s), worker = %(worker)s
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s
  AND status <> 'done' AND retry_attempts <= %(attempts)s
RETURNING task_id;

-- name: renew_lease
UPDATE graphruntime_step_tasks SET lease_until = now() + make_interval(secs => %(lease)s)
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s
  AND status <> 'done';

-- name: schedule_retry
-- A task whose node failed and will run again as a new job after a countdown: its
-- lease covers the wait, so the sweeper does not re-send it meanwhile.
UPDATE graphruntime_step_tasks
SET retry_attempts = %(attempts)s, lease_until = now() + make_interval(secs => %(hold)s)
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s
  AND status <> 'done';

-- name: stale_tasks
-- Tasks whose job never started in time, or whose worker stopped renewing its lease,
-- of runs still going (an ended run's open tasks are never needed again).
UPDATE graphruntime_step_tasks
SET dispatched_at = now(), lease_until = NULL, attempts = attempts + 1
WHERE (run_id, checkpoint_id, task_id) IN (
    SELECT t.run_id, t.checkpoint_id, t.task_id FROM graphruntime_step_tasks t
    WHERE t.status = 'dispatched'
      AND ((t.lease_until IS NULL AND t.dispatched_at < now() - make_interval(secs => %(age)s))
           OR t.lease_until < now())
      AND EXISTS (SELECT 1 FROM graphruntime_runs r
                  WHERE r.run_id = t.run_id AND r.status IN ('queued', 'running'))
    ORDER BY t.dispatched_at LIMIT %(limit)s FOR UPDATE OF t SKIP LOCKED)
RETURNING run_id, checkpoint_id, task_id, thread_id, attempts, task_path, retry_attempts;

-- name: stalled_runs
SELECT run_id FROM graphruntime_runs r
WHERE status IN ('queued', 'running') AND updated_at < now() - make_interval(secs => %(age)s)
  AND NOT EXISTS (SELECT 1 FROM graphruntime_step_tasks t
                  WHERE t.run_id = r.run_id AND t.status = 'dispatched')
ORDER BY updated_at LIMIT %(limit)s;

-- name: add_event
-- Streaming clients LISTEN on graphruntime_events (payload: the run id). A batch of rows
-- is one transaction, and Postgres folds equal notifications of a transaction into one.
WITH added AS (
    INSERT INTO graphruntime_run_events (run_id, ns, mode, payload_type, payload)
    VALUES (%(run_id)s, %(ns)s, %(mode)s, %(payload_type)s, %(payload)s)
    RETURNING run_id
)
SELECT pg_notify('graphruntime_events', run_id::text) FROM added;

-- name: error_events
SELECT payload_type, payload FROM graphruntime_run_events
WHERE run_id = %(run_id)s AND mode = 'error' ORDER BY seq;

-- name: events_after
SELECT seq, ns, mode, payload_type, payload FROM graphruntime_run_events
WHERE run_id = %(run_id)s AND seq > %(after)s ORDER BY seq;

-- name: thread_lock
SELECT pg_try_advisory_lock(4242, hashtext(%(thread_id)s)) AS locked;

-- name: thread_unlock
SELECT pg_advisory_unlock(4242, hashtext(%(thread_id)s)) AS unlocked;

-- name: runs_of_thread
SELECT run_id, status, kind, created_at, updated_at, error FROM graphruntime_runs
WHERE thread_id = %(thread_id)s ORDER BY created_at DESC LIMIT %(limit)s;
