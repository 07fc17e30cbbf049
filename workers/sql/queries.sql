-- Named queries of the workers' run store, loaded by workers/_sql.py: each starts at a
-- "-- name: <name>" line and runs to the next one. Always parameterized.
--
-- A worker is alive while its heartbeat is younger than %(stale)s seconds; a thread
-- lease or task claim held by a dead worker is free.

-- name: create_run
-- One statement: binds the thread to its graph on its first run, refuses a run under
-- another graph name (no row), dedupes an idempotency key (no row), and records which
-- run's pause a resume answers (see latest; a second resume of the same pause
-- conflicts on graphruntime_runs_one_resume: no row). A resume or a cancel never
-- creates a thread: one for an unknown thread is refused (no row). A resume
-- is accepted only while the wait it answers is open: a resume map's interrupt ids
-- (%(answers)s) must all be in the thread's inbox; a plain value needs a wait in the
-- inbox, a thread whose latest run stopped without one (a static breakpoint, or an edit
-- while paused), or a run in flight (it answers the pause that run makes; one resume per
-- pause, as above). A thread that finished or was cancelled refuses it (no row).
WITH bound AS (
    INSERT INTO graphruntime_threads (thread_id, graph)
    SELECT %(thread_id)s, %(graph)s WHERE %(kind)s NOT IN ('resume', 'cancel')
    ON CONFLICT (thread_id) DO NOTHING
    RETURNING graph
), thread AS (
    SELECT graph FROM bound
    UNION ALL
    SELECT graph FROM graphruntime_threads WHERE thread_id = %(thread_id)s
    LIMIT 1
), latest AS (
    -- the pause a resume answers: the thread's latest run's, or, while that run is a
    -- resume still under way, the pause it answers (a second answer conflicts)
    SELECT CASE WHEN kind = 'resume' AND status IN ('queued', 'running')
                THEN resumes_run ELSE run_id END AS run_id
    FROM graphruntime_runs
    WHERE thread_id = %(thread_id)s
    ORDER BY created_at DESC, run_id DESC LIMIT 1
)
INSERT INTO graphruntime_runs
    (run_id, thread_id, graph, status, kind, payload_type, payload, idempotency_key,
     request_digest, origin, resumes_run, created_at)
SELECT %(run_id)s, %(thread_id)s, %(graph)s, 'queued', %(kind)s, %(payload_type)s,
       %(payload)s, %(idempotency_key)s, %(request_digest)s, %(origin)s,
       CASE WHEN %(kind)s = 'resume' THEN (SELECT run_id FROM latest) END,
       -- not now(): create_runs queues a batch in one transaction, and a thread's runs
       -- go in created_at order (a tie would fall to the random run ids)
       clock_timestamp()
WHERE (SELECT graph FROM thread) = %(graph)s
  AND (%(kind)s <> 'resume' OR CASE
      WHEN %(answers)s::text[] IS NOT NULL THEN
          cardinality(%(answers)s::text[]) > 0
          AND (SELECT count(*) FROM graphruntime_interrupts i
               WHERE i.thread_id = %(thread_id)s
                 AND i.interrupt_id = ANY(%(answers)s::text[]))
              = cardinality(%(answers)s::text[])
      ELSE EXISTS (SELECT 1 FROM graphruntime_interrupts i
                   WHERE i.thread_id = %(thread_id)s)
           OR (SELECT status FROM graphruntime_runs
               WHERE thread_id = %(thread_id)s
               ORDER BY created_at DESC, run_id DESC LIMIT 1)
              IN ('interrupted', 'queued', 'running')
      END)
ON CONFLICT DO NOTHING
-- what the client did not send: the rest of the row is its own request
RETURNING status, resumes_run, created_at, updated_at;

-- name: explain_refused_run
-- Why create_run inserted nothing: the thread's graph, the run with the same key, the
-- resume that already answers the same pause, the thread's open waits and how its
-- latest run ended.
SELECT
    (SELECT graph FROM graphruntime_threads WHERE thread_id = %(thread_id)s) AS thread_graph,
    (SELECT array_agg(interrupt_id ORDER BY interrupt_id) FROM graphruntime_interrupts
     WHERE thread_id = %(thread_id)s) AS open_waits,
    (SELECT status FROM graphruntime_runs WHERE thread_id = %(thread_id)s
     ORDER BY created_at DESC, run_id DESC LIMIT 1) AS latest_status,
    k.run_id AS same_key_run, k.request_digest AS same_key_digest,
    p.run_id AS same_pause_run, p.status AS same_pause_status
FROM (SELECT 1) AS one
LEFT JOIN graphruntime_runs k
    ON k.thread_id = %(thread_id)s AND k.idempotency_key = %(idempotency_key)s
LEFT JOIN graphruntime_runs p
    ON p.thread_id = %(thread_id)s AND %(kind)s = 'resume'
    AND p.resumes_run = (SELECT CASE WHEN l.kind = 'resume'
                                          AND l.status IN ('queued', 'running')
                                     THEN l.resumes_run ELSE l.run_id END
                         FROM graphruntime_runs l
                         WHERE l.thread_id = %(thread_id)s
                         ORDER BY l.created_at DESC, l.run_id DESC LIMIT 1);

-- name: get_run
SELECT * FROM graphruntime_runs WHERE run_id = %(run_id)s;

-- name: active_runs_of_thread
SELECT run_id FROM graphruntime_runs
WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running');

-- name: set_running
-- Soft state, as the leases: committed without waiting for the WAL flush (the
-- set_config below, local to this statement's transaction). The run's end is a
-- durable commit and makes it durable; a crash before loses it with the work it
-- describes, which is redone.
UPDATE graphruntime_runs
SET status = 'running', stop = coalesce(stop, %(stop)s), updated_at = now()
WHERE run_id = %(run_id)s AND status IN ('queued', 'running')
  AND set_config('synchronous_commit', 'off', true) IS NOT NULL;

-- name: touch_run
UPDATE graphruntime_runs SET updated_at = now()
WHERE run_id = %(run_id)s
  AND set_config('synchronous_commit', 'off', true) IS NOT NULL;

-- name: end_runs
-- A coordinator job's round ends, in one statement and so one durable commit (the
-- connection's autocommit; never asynchronous: a release lost in a crash would give the
-- lease back to a live worker sure it had freed it, and the thread would wait for that
-- worker's next heartbeat): the runs of %(ends)s end, the threads %(threads)s are
-- freed, and each thread's next run is read after its lease row is locked. Runs a
-- claim marked running and nothing advanced are queued again by requeue_runs, sent
-- before this statement in its transaction when there are any (rarely): an UPDATE of
-- graphruntime_runs here would cost every end the opening of that table's indexes, rows
-- or none (a fifth of this statement's CPU).
--
-- The epoch check comes first: with %(epoch)s (the server's when the runs were claimed)
-- the statement is refused (SQLSTATE GRCRA) if Postgres recovered from a crash since,
-- which may have taken the job's asynchronous commits back; nothing is written.
--
-- An end ends a queued or running run. Ends and waits come as JSON arrays of objects
-- (one parameter each, not an array per column: cheaper for the driver to send); bytes
-- in base64, JSON values as JSON text; read as json, not jsonb (parsed once, not
-- parsed then converted to jsonb's binary form). Waiting
-- clients LISTEN on graphruntime_runs; the notification is delivered at commit. Its
-- payload is the run id, then, when they are small (NOTIFY payloads stop at 8000 bytes),
-- how it ended: ' <status> <result_type or -> <result in base64 or -> <error JSON>'
-- (workers/_listener.py), so a waiting client needs no read of the run.
-- With set_inbox, the thread's inbox is set to what it waits on now, in the same
-- statement (only when this call ended the run); %(inbox_thread)s: a thread whose inbox
-- is set with no run to end (an edit of its state). A wait still pending keeps its row,
-- its created_at and its claim; the others go. Each wait (%(waits)s) names its thread.
--
-- Rows: one per run this call ended (ended true), then one per thread with a next run
-- (ended false; graphruntime_next_runs, migration 0009, called once the leases are freed
-- and the runs ended: a run queued while the lease was held, whose own job found the
-- lease taken, so the caller sends it on).
WITH checked AS (
    -- the function (migration 0007) only when the epoch row is not the one seen: a
    -- PL/pgSQL call costs more than the lookup
    SELECT CASE WHEN %(epoch)s::uuid IS NULL
                  OR %(epoch)s::uuid = (SELECT e.epoch FROM graphruntime_epoch e)
                THEN true ELSE graphruntime_check_epoch(%(epoch)s::uuid) END AS ok
), ending AS (
    SELECT e.* FROM json_to_recordset(%(ends)s::json)
        AS e(run_id uuid, status text, result_type text, result text, error text,
             set_inbox boolean)
    WHERE (SELECT ok FROM checked)
), done AS (
    UPDATE graphruntime_runs r
    SET status = e.status, result_type = e.result_type,
        result = decode(e.result, 'base64'), error = e.error::jsonb, updated_at = now()
    FROM ending e
    WHERE r.run_id = e.run_id
      -- found by run id: on `status IN (...)` as such, the planner would scan every
      -- queued or running run, and each one's versions not yet vacuumed, at every end
      AND r.run_id = ANY (ARRAY(SELECT run_id FROM ending))
      AND CASE WHEN r.status IN ('queued', 'running') THEN true ELSE false END
    RETURNING r.run_id, r.thread_id, r.status, r.result_type, r.result, r.error, e.set_inbox
), thread AS (
    SELECT thread_id FROM done WHERE set_inbox
    UNION ALL
    SELECT %(inbox_thread)s::text WHERE %(inbox_thread)s::text IS NOT NULL
), waits AS (
    SELECT x.thread_id, x.interrupt_id, x.graph, x.run_id, x.checkpoint_id, x.node,
           x.namespace, x.value::jsonb, x.deadline, x.default_type,
           decode(x.default_value, 'base64'), x.response_schema::jsonb
    FROM json_to_recordset(%(waits)s::json)
        AS x(thread_id text, interrupt_id text, graph text, run_id uuid, checkpoint_id text,
             node text, namespace text, value text, deadline timestamptz,
             default_type text, default_value text, response_schema text)
    WHERE x.thread_id IN (SELECT thread_id FROM thread)
), cleared AS (
    DELETE FROM graphruntime_interrupts i USING thread
    WHERE i.thread_id = thread.thread_id
      AND NOT EXISTS (SELECT 1 FROM waits w
                      WHERE w.thread_id = i.thread_id AND w.interrupt_id = i.interrupt_id)
), added AS (
    INSERT INTO graphruntime_interrupts
        (thread_id, interrupt_id, graph, run_id, checkpoint_id, node, namespace, value,
         deadline, default_type, default_value, response_schema)
    SELECT * FROM waits
    ON CONFLICT (thread_id, interrupt_id) DO UPDATE
    SET graph = EXCLUDED.graph, run_id = EXCLUDED.run_id,
        checkpoint_id = EXCLUDED.checkpoint_id, node = EXCLUDED.node,
        namespace = EXCLUDED.namespace, value = EXCLUDED.value, deadline = EXCLUDED.deadline,
        default_type = EXCLUDED.default_type, default_value = EXCLUDED.default_value,
        response_schema = EXCLUDED.response_schema
), released AS (
    UPDATE graphruntime_threads
    SET lease_holder = NULL, leased_at = NULL, lease_token = NULL
    WHERE thread_id = ANY(%(threads)s::text[]) AND lease_holder = %(worker)s
    RETURNING thread_id
), notified AS (
    SELECT run_id, thread_id, pg_notify('graphruntime_runs', run_id::text || CASE
        WHEN coalesce(octet_length(result), 0) + coalesce(octet_length(error::text), 0) <= 5000
        THEN ' ' || status || ' ' || coalesce(result_type, '-') || ' '
             || coalesce(encode(result, 'base64'), '-') || ' ' || coalesce(error::text, '')
        ELSE '' END) AS notify
    FROM done
)
SELECT thread_id, run_id, true AS ended FROM notified
UNION ALL
-- its argument reads every row the next runs must follow (and the epoch check, which
-- runs even when no run ends): the call comes after them
SELECT n.thread_id, n.run_id, false FROM graphruntime_next_runs(
    %(threads)s::text[],
    (SELECT count(*) FROM released) + (SELECT count(*) FROM notified)
    + (SELECT count(*) FROM checked)) AS n;

-- name: requeue_runs
-- The runs of %(requeue)s that a claim marked running and nothing advanced, queued
-- again: sent before end_runs, in its transaction (whose epoch check refuses both).
UPDATE graphruntime_runs SET status = 'queued'
WHERE run_id = ANY(%(requeue)s::uuid[])
  AND CASE WHEN status = 'running' THEN true ELSE false END;  -- by run id, as end_runs

-- name: bind_thread
-- The thread's graph: the given one if the thread is new (it is bound to it now).
WITH bound AS (
    INSERT INTO graphruntime_threads (thread_id, graph)
    VALUES (%(thread_id)s, %(graph)s)
    ON CONFLICT (thread_id) DO NOTHING
    RETURNING graph
)
SELECT graph FROM bound
UNION ALL
SELECT graph FROM graphruntime_threads WHERE thread_id = %(thread_id)s
LIMIT 1;

-- name: acquire_thread
-- Take the thread's lease if it is free, ours, or held by a dead worker, for the job
-- %(token)s. Taking a lease is soft state: committed without waiting for the WAL flush
-- (see set_running); a lease lost in a crash is simply taken again. Releases are durable
-- (end_runs), and a lease a crash gives back to a live holder all the same is
-- freed by the holder's next heartbeat (its job token is not the current one).
UPDATE graphruntime_threads t
SET lease_holder = %(worker)s, leased_at = now(), lease_token = %(token)s
WHERE t.thread_id = %(thread_id)s
  AND (t.lease_holder IS NULL OR t.lease_holder = %(worker)s
       OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                      WHERE w.worker = t.lease_holder
                        AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
  AND set_config('synchronous_commit', 'off', true) IS NOT NULL
RETURNING thread_id;

-- name: claim_run
-- A coordinator job's start, in one statement: the message's run; if it is still to
-- finish, its thread's lease (soft state, see acquire_thread) and, under it, the
-- thread's next run (see graphruntime_next_runs, migration 0009), marked running (the row
-- shows its status as it was). One row: target_status (NULL: no such run), leased, then the run's columns.
WITH target AS (
    SELECT thread_id, status FROM graphruntime_runs WHERE run_id = %(run_id)s
), lease AS (
    UPDATE graphruntime_threads t
    SET lease_holder = %(worker)s, leased_at = now(), lease_token = %(token)s
    FROM target
    WHERE t.thread_id = target.thread_id AND target.status IN ('queued', 'running')
      AND (t.lease_holder IS NULL OR t.lease_holder = %(worker)s
           OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                          WHERE w.worker = t.lease_holder
                            AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
      AND set_config('synchronous_commit', 'off', true) IS NOT NULL
    RETURNING t.thread_id
), next AS (
    SELECT r.run_id FROM graphruntime_runs r JOIN lease ON r.thread_id = lease.thread_id
    WHERE r.status IN ('queued', 'running')
    ORDER BY r.kind <> 'cancel', r.created_at, r.run_id LIMIT 1
), marked AS (
    UPDATE graphruntime_runs r SET status = 'running', updated_at = now()
    FROM next WHERE r.run_id = next.run_id AND r.status = 'queued'
)
SELECT target.status AS target_status, EXISTS (SELECT FROM lease) AS leased,
       -- graphruntime_epoch() (migration 0007) only when the row is missing: a PL/pgSQL
       -- call costs more than the lookup
       coalesce((SELECT e.epoch FROM graphruntime_epoch e), graphruntime_epoch()) AS epoch,
       r.*
FROM target
LEFT JOIN next ON true
LEFT JOIN graphruntime_runs r ON r.run_id = next.run_id;

-- name: claim_queued_runs
-- A free coordinator job takes runs from the table (workers/_drain.py), in one
-- statement: up to %(limit)s queued runs of the graphs it serves (%(graphs)s), not in
-- %(skip)s, each the first in line on its thread, on a thread no live worker holds;
-- oldest first. Rows another job is taking are skipped, not waited for. Each thread is
-- leased as claim_run leases it (soft state) and its run marked running; the rows show
-- the runs as they were (queued), with claim_run's columns.
WITH picked AS (
    SELECT r.run_id, r.thread_id FROM graphruntime_runs r
    JOIN graphruntime_threads th ON th.thread_id = r.thread_id
    WHERE r.status = 'queued' AND r.graph = ANY(%(graphs)s::text[])
      AND r.run_id <> ALL(%(skip)s::uuid[])
      AND NOT EXISTS (SELECT 1 FROM graphruntime_runs e
                      WHERE e.thread_id = r.thread_id AND e.status IN ('queued', 'running')
                        AND (e.kind <> 'cancel', e.created_at, e.run_id)
                            < (r.kind <> 'cancel', r.created_at, r.run_id))
      AND (th.lease_holder IS NULL OR th.lease_holder = %(worker)s
           OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                          WHERE w.worker = th.lease_holder
                            AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
    ORDER BY r.updated_at LIMIT %(limit)s
    FOR UPDATE OF r, th SKIP LOCKED
), lease AS (
    UPDATE graphruntime_threads t
    SET lease_holder = %(worker)s, leased_at = now(), lease_token = %(token)s
    FROM picked
    WHERE t.thread_id = picked.thread_id
      AND set_config('synchronous_commit', 'off', true) IS NOT NULL
    RETURNING t.thread_id
), marked AS (
    UPDATE graphruntime_runs r SET status = 'running', updated_at = now()
    FROM picked JOIN lease ON lease.thread_id = picked.thread_id
    WHERE r.run_id = picked.run_id
)
SELECT r.status AS target_status, true AS leased,
       coalesce((SELECT e.epoch FROM graphruntime_epoch e), graphruntime_epoch()) AS epoch, r.*
FROM picked JOIN lease ON lease.thread_id = picked.thread_id
JOIN graphruntime_runs r ON r.run_id = picked.run_id
ORDER BY r.updated_at;

-- name: heartbeat
-- Beats, and frees what the worker holds that its current job (token %(keep)s; NULL:
-- none) does not: task claims of a job that ended or gave up without completing them,
-- and thread leases a job could not free through an outage, or whose durable release a
-- Postgres crash took back. A claim or lease younger than %(grace)s seconds is left
-- alone: its job may have just begun. Returns the leases it freed, one row each.
WITH beat AS (
    INSERT INTO graphruntime_workers (worker, hostname, pid, node, graphs)
    VALUES (%(worker)s, %(hostname)s, %(pid)s, %(node)s, %(graphs)s)
    ON CONFLICT (worker) DO UPDATE
    SET heartbeat_at = now(), node = EXCLUDED.node, graphs = EXCLUDED.graphs
    RETURNING worker
), claims_freed AS (
    UPDATE graphruntime_step_tasks
    SET worker = NULL, claimed_at = NULL, claim_token = NULL
    WHERE worker = %(worker)s AND status = 'dispatched'
      AND claim_token IS DISTINCT FROM %(keep)s
      AND claimed_at < now() - make_interval(secs => %(grace)s)
)
UPDATE graphruntime_threads SET lease_holder = NULL, leased_at = NULL, lease_token = NULL
WHERE lease_holder = %(worker)s AND lease_token IS DISTINCT FROM %(keep)s
  AND leased_at < now() - make_interval(secs => %(grace)s)
RETURNING thread_id;

-- name: epoch
-- See migration 0007: the server's epoch, which crash recovery resets.
SELECT graphruntime_epoch() AS epoch;

-- name: check_epoch
-- First in a durable commit that vouches for a job's asynchronous commits: refused
-- (SQLSTATE GRCRA) if the server recovered from a crash since the job read %(epoch)s.
SELECT graphruntime_check_epoch(%(epoch)s::uuid);

-- name: beat
INSERT INTO graphruntime_workers (worker, hostname, pid, node, graphs)
VALUES (%(worker)s, %(hostname)s, %(pid)s, %(node)s, %(graphs)s)
ON CONFLICT (worker) DO UPDATE
SET heartbeat_at = now(), node = EXCLUDED.node, graphs = EXCLUDED.graphs;

-- name: remove_worker
DELETE FROM graphruntime_workers WHERE worker = %(worker)s;

-- name: live_workers
SELECT worker, hostname, pid, started_at, heartbeat_at, node, graphs FROM graphruntime_workers
WHERE heartbeat_at > now() - make_interval(secs => %(stale)s)
ORDER BY worker;

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

-- name: step_tasks
SELECT task_id, status, error FROM graphruntime_step_tasks
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s;

-- name: async_commit
-- For soft state (claims, leases, a run's status) and writes that a later durable
-- commit makes durable: no WAL flush wait.
SET LOCAL synchronous_commit TO OFF;

-- name: claim_task
-- Claims one of a message's tasks if it is open, nobody alive holds it, and the message
-- names the task's registered path (a message for another task claims nothing). One row by
-- its whole key, run once per task (pipelined): `task_id = ANY(ids)` would be planned as
-- a filter over every task of the step, quadratic for a 10,000-task fan-out.
-- `status <> 'done'` rather than `= 'dispatched'`: the latter lets the planner scan
-- the partial index of open tasks for every row.
UPDATE graphruntime_step_tasks t
SET claimed_at = now(), worker = %(worker)s, claim_token = %(token)s,
    started_at = coalesce(t.started_at, now())
WHERE t.run_id = %(run_id)s AND t.checkpoint_id = %(checkpoint_id)s
  AND t.task_id = %(task_id)s AND t.task_path = %(path)s::jsonb
  AND t.status <> 'done' AND t.retry_attempts <= %(attempts)s
  AND (t.worker IS NULL OR t.worker = %(worker)s
       OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                      WHERE w.worker = t.worker
                        AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
RETURNING task_id;

-- name: complete_task
-- Marks a task done (see claim_task for the query's shape); only the worker holding
-- its claim may: a duplicate delivery that lost the claim completes nothing.
UPDATE graphruntime_step_tasks
SET status = 'done', done_at = now(), error = %(error)s::jsonb
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s
  AND status <> 'done' AND worker = %(worker)s
RETURNING task_id;

-- name: release_claims
UPDATE graphruntime_step_tasks SET worker = NULL, claimed_at = NULL, claim_token = NULL
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s
  AND task_id = ANY(%(task_ids)s::text[]) AND worker = %(worker)s AND status <> 'done';

-- name: count_down_step
UPDATE graphruntime_steps SET open_tasks = open_tasks - %(done)s
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s
RETURNING open_tasks;

-- name: hold_for_retry
-- A task whose node failed and runs again as a new job after a countdown: the claim
-- is released and the sweeper leaves the task alone until the hold ends.
UPDATE graphruntime_step_tasks
SET retry_attempts = %(attempts)s, hold_until = now() + make_interval(secs => %(hold)s),
    worker = NULL, claimed_at = NULL, claim_token = NULL
WHERE run_id = %(run_id)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s
  AND status <> 'done';

-- name: orphaned_tasks
-- Open tasks of runs still going that nobody will finish: claimed by a dead worker, or
-- never claimed within %(unclaimed)s seconds of their dispatch (a lost message). Marks
-- them re-dispatched; SKIP LOCKED keeps concurrent sweepers from taking the same rows.
UPDATE graphruntime_step_tasks
SET dispatched_at = now(), worker = NULL, claimed_at = NULL, claim_token = NULL,
    attempts = attempts + 1
WHERE (run_id, checkpoint_id, task_id) IN (
    SELECT t.run_id, t.checkpoint_id, t.task_id FROM graphruntime_step_tasks t
    WHERE t.status = 'dispatched'
      AND (t.hold_until IS NULL OR t.hold_until < now())
      AND CASE
          WHEN t.worker IS NULL
              THEN t.dispatched_at < now() - make_interval(secs => %(unclaimed)s)
          ELSE NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                           WHERE w.worker = t.worker
                             AND w.heartbeat_at > now() - make_interval(secs => %(stale)s))
          END
      AND EXISTS (SELECT 1 FROM graphruntime_runs r
                  WHERE r.run_id = t.run_id AND r.status IN ('queued', 'running'))
    ORDER BY t.dispatched_at LIMIT %(limit)s FOR UPDATE OF t SKIP LOCKED)
RETURNING run_id, checkpoint_id, task_id, thread_id, attempts, task_path, retry_attempts;

-- name: stalled_runs
-- The oldest runs of their threads still going that nothing is advancing: no open task,
-- no live worker holding the thread, and no move for %(idle)s seconds (their coordinator message was lost, or the
-- worker coordinating them died). Touched here, so one sweep nudges each run once.
UPDATE graphruntime_runs SET updated_at = now()
WHERE run_id IN (
    SELECT r.run_id FROM graphruntime_runs r
    JOIN graphruntime_threads th ON th.thread_id = r.thread_id
    WHERE r.status IN ('queued', 'running')
      AND r.updated_at < now() - make_interval(secs => %(idle)s)
      AND NOT EXISTS (SELECT 1 FROM graphruntime_step_tasks t
                      WHERE t.run_id = r.run_id AND t.status = 'dispatched')
      AND NOT EXISTS (SELECT 1 FROM graphruntime_runs e
                      WHERE e.thread_id = r.thread_id AND e.status IN ('queued', 'running')
                        AND (e.kind <> 'cancel', e.created_at, e.run_id)
                            < (r.kind <> 'cancel', r.created_at, r.run_id))
      AND (th.lease_holder IS NULL
           OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                          WHERE w.worker = th.lease_holder
                            AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
    ORDER BY r.updated_at LIMIT %(limit)s FOR UPDATE OF r SKIP LOCKED)
RETURNING run_id;

-- name: add_event
-- Streaming clients LISTEN on graphruntime_events (payload: the run id). A batch of rows
-- is one transaction, and Postgres folds equal notifications of a transaction into one.
WITH added AS (
    INSERT INTO graphruntime_run_events (run_id, ns, mode, payload_type, payload)
    VALUES (%(run_id)s, %(ns)s, %(mode)s, %(payload_type)s, %(payload)s)
    RETURNING run_id
)
SELECT pg_notify('graphruntime_events', run_id::text) FROM added;

-- name: events_after
SELECT seq, ns, mode, payload_type, payload FROM graphruntime_run_events
WHERE run_id = %(run_id)s AND seq > %(after)s ORDER BY seq;

-- name: lock_run_events
-- append_events' lock, for a transaction that adds a run's events otherwise
SELECT pg_advisory_xact_lock(hashtext('graphruntime_run_events'), hashtext(%(run_id)s::text));

-- name: append_events
-- A batch of one run's chunks (a node's tokens as it produces them), in one statement, in
-- the order given. The run's lock, held until commit, makes its batches commit in the order
-- their rows are numbered: a client reading past the last seq it saw never skips a batch
-- that committed late. One notification.
WITH locked AS MATERIALIZED (
    SELECT pg_advisory_xact_lock(hashtext('graphruntime_run_events'), hashtext(%(run_id)s::text))
), added AS (
    INSERT INTO graphruntime_run_events (run_id, ns, mode, payload_type, payload)
    SELECT %(run_id)s::uuid, e.ns, e.mode, e.payload_type, e.payload
    FROM locked,
         unnest(%(ns)s::text[], %(modes)s::text[], %(types)s::text[], %(payloads)s::bytea[])
             WITH ORDINALITY AS e(ns, mode, payload_type, payload, ord)
    ORDER BY e.ord
    RETURNING 1
)
SELECT pg_notify('graphruntime_events', %(run_id)s::text) WHERE EXISTS (SELECT 1 FROM added);

-- name: inbox_page
-- Run unprepared: planned with the actual values, the NULL conditions fold away. A page
-- leaves the deadlines' resume values out (typed bytes, for the deadline sweep only), and
-- shows a claim only while it lasts. any_of: the value contains one of these (the formats
-- an action filter may match).
SELECT i.graph, i.thread_id, i.interrupt_id, i.node, i.namespace, i.value, i.created_at,
       i.deadline, i.run_id, i.checkpoint_id, NULL AS default_type, NULL AS default_value,
       i.response_schema,
       CASE WHEN i.claimed_until > now() THEN i.claimed_by END AS claimed_by,
       CASE WHEN i.claimed_until > now() THEN i.claimed_until END AS claimed_until,
       EXISTS (SELECT 1 FROM graphruntime_runs r
               WHERE r.thread_id = i.thread_id AND r.status IN ('queued', 'running'))
           AS resuming
FROM graphruntime_interrupts i
WHERE (%(graph)s::text IS NULL OR i.graph = %(graph)s)
  AND (%(where)s::jsonb IS NULL OR i.value @> %(where)s::jsonb)
  AND (%(any_of)s::jsonb[] IS NULL OR i.value @> ANY(%(any_of)s::jsonb[]))
  AND (%(node)s::text IS NULL OR i.node = %(node)s)
  AND (%(thread_id)s::text IS NULL OR i.thread_id = %(thread_id)s)
  AND (%(older_than)s::timestamptz IS NULL OR i.created_at < %(older_than)s)
  AND (%(age)s::float8 IS NULL OR i.created_at < now() - make_interval(secs => %(age)s))
  AND (%(after_at)s::timestamptz IS NULL
       OR (i.created_at, i.thread_id, i.interrupt_id)
          > (%(after_at)s, %(after_thread)s, %(after_id)s))
  AND (%(thread_ids)s::text[] IS NULL
       OR (i.thread_id, i.interrupt_id) IN
          (SELECT * FROM unnest(%(thread_ids)s::text[], %(interrupt_ids)s::text[])))
ORDER BY i.created_at, i.thread_id, i.interrupt_id
LIMIT %(limit)s;

-- name: claim_wait
-- An approver claims a pending wait until now + seconds: taken when it is free, lapsed,
-- theirs already, or taken over; returns the claim as it stands after the attempt.
WITH taken AS (
    UPDATE graphruntime_interrupts
    SET claimed_by = %(actor)s, claimed_until = now() + make_interval(secs => %(seconds)s)
    WHERE thread_id = %(thread_id)s AND interrupt_id = %(interrupt_id)s
      AND (claimed_by IS NULL OR claimed_until <= now() OR claimed_by = %(actor)s
           OR %(take_over)s)
    RETURNING claimed_by, claimed_until
)
SELECT claimed_by, claimed_until, true AS taken FROM taken
UNION ALL
SELECT claimed_by, claimed_until, false FROM graphruntime_interrupts
WHERE thread_id = %(thread_id)s AND interrupt_id = %(interrupt_id)s
  AND NOT EXISTS (SELECT 1 FROM taken);

-- name: release_wait
-- The approver's own claim on a wait ends.
UPDATE graphruntime_interrupts SET claimed_by = NULL, claimed_until = NULL
WHERE thread_id = %(thread_id)s AND interrupt_id = %(interrupt_id)s
  AND claimed_by = %(actor)s
RETURNING thread_id;

-- name: expired_waits
-- Pending interrupts past their deadline, of threads with no run under way.
SELECT i.*, false AS resuming
FROM graphruntime_interrupts i
WHERE i.deadline < now() AND i.default_type IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM graphruntime_runs r
                  WHERE r.thread_id = i.thread_id AND r.status IN ('queued', 'running'))
ORDER BY i.deadline LIMIT %(limit)s;

-- name: cancel_thread
-- Under the thread's lease, by its cancel run %(cancel_run)s: the thread's runs made
-- before it, still queued or running, end as cancelled, their open tasks that no live
-- worker holds are
-- closed (nobody claims or re-sends them; a claim racing this waits for its row lock and
-- then finds the task closed), and its inbox is cleared, in one transaction.
WITH cancelled AS (
    UPDATE graphruntime_runs
    SET status = 'cancelled', error = %(error)s::jsonb, updated_at = now()
    WHERE thread_id = %(thread_id)s AND status IN ('queued', 'running')
      AND run_id <> %(cancel_run)s AND kind <> 'cancel'
      AND created_at < (SELECT c.created_at FROM graphruntime_runs c
                        WHERE c.run_id = %(cancel_run)s)
    RETURNING run_id
), closed AS (
    UPDATE graphruntime_step_tasks t SET status = 'done', done_at = now()
    FROM cancelled c
    WHERE t.run_id = c.run_id AND t.status = 'dispatched'
      AND (t.worker IS NULL
           OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                          WHERE w.worker = t.worker
                            AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
), cleared AS (
    DELETE FROM graphruntime_interrupts WHERE thread_id = %(thread_id)s
)
SELECT run_id, pg_notify('graphruntime_runs', run_id::text) AS notified FROM cancelled;

-- name: running_cancelled_tasks
-- The tasks of the cancelled runs that live workers still run (claimed before the
-- cancel); those no live worker holds any more are closed first.
WITH closed AS (
    UPDATE graphruntime_step_tasks t SET status = 'done', done_at = now()
    WHERE t.run_id = ANY(%(run_ids)s::uuid[]) AND t.status = 'dispatched'
      AND (t.worker IS NULL
           OR NOT EXISTS (SELECT 1 FROM graphruntime_workers w
                          WHERE w.worker = t.worker
                            AND w.heartbeat_at > now() - make_interval(secs => %(stale)s)))
)
SELECT t.task_id, t.worker, t.task_path FROM graphruntime_step_tasks t
WHERE t.run_id = ANY(%(run_ids)s::uuid[]) AND t.status = 'dispatched'
  AND t.worker IS NOT NULL
  AND EXISTS (SELECT 1 FROM graphruntime_workers w
              WHERE w.worker = t.worker
                AND w.heartbeat_at > now() - make_interval(secs => %(stale)s));

-- name: resume_history
SELECT * FROM graphruntime_runs
WHERE thread_id = %(thread_id)s AND kind = 'resume'
ORDER BY created_at DESC LIMIT %(limit)s;

-- name: runs_by_key
SELECT * FROM graphruntime_runs
WHERE idempotency_key = %(key)s AND graph = %(graph)s;

-- name: list_runs
-- Run unprepared: planned with the actual values, the NULL conditions fold away. A
-- running run's progress: the tasks of its latest dispatched step, done and in all.
SELECT r.run_id, r.thread_id, r.graph, r.status, r.kind, r.created_at, r.updated_at,
       r.error, r.origin, p.tasks_done, p.tasks_total
FROM graphruntime_runs r
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE st.status = 'done') AS tasks_done, count(*) AS tasks_total
    FROM graphruntime_step_tasks st
    WHERE r.status = 'running' AND st.run_id = r.run_id
      AND st.checkpoint_id = (SELECT max(checkpoint_id) FROM graphruntime_step_tasks
                              WHERE run_id = r.run_id)
) p ON true
WHERE (%(thread_id)s::text IS NULL OR r.thread_id = %(thread_id)s)
  AND (%(graph)s::text IS NULL OR r.graph = %(graph)s)
  AND (%(status)s::text IS NULL OR r.status = %(status)s)
  AND (%(age)s::float8 IS NULL OR r.created_at > now() - make_interval(secs => %(age)s))
ORDER BY r.created_at DESC, r.run_id DESC
LIMIT %(limit)s;

-- name: overview
-- What `graphrun status` shows: runs in flight, pending interrupts, live workers (Celery
-- nodes; a process without a node counts as one) and their processes.
SELECT
    (SELECT count(*) FROM graphruntime_runs WHERE status = 'queued') AS queued,
    (SELECT count(*) FROM graphruntime_runs WHERE status = 'running') AS running,
    (SELECT count(*) FROM graphruntime_interrupts) AS pending_interrupts,
    (SELECT count(*) FROM graphruntime_interrupts WHERE deadline < now()) AS overdue,
    live.workers, live.processes
FROM (
    SELECT count(DISTINCT coalesce(node, worker)) AS workers, count(*) AS processes
    FROM graphruntime_workers
    WHERE heartbeat_at > now() - make_interval(secs => %(stale)s)
      AND worker NOT LIKE 'client:%%'
) AS live;
