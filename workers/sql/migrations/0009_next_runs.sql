-- Each thread's next run, read with a snapshot of its own (see end_runs in
-- workers/sql/queries.sql): a VOLATILE function takes a fresh snapshot for its query and
-- is never inlined, so, called from a statement after that statement locked and freed
-- the threads' leases, it sees every run committed before those locks, and the
-- statement's own changes so far. A run whose job found a lease taken was committed
-- before that job looked, so before the lock: it is seen here.
--
-- after_locks: a value the calling statement computes from the rows it locked (a
-- count); passing it makes the call come after them. Its value is not used.
--
-- Runs of a thread go in order, its oldest still to finish first, but a cancel before
-- any other (it ends them). One row per thread that has one.
CREATE FUNCTION graphruntime_next_runs(threads text[], after_locks bigint)
RETURNS TABLE (thread_id text, run_id uuid)
LANGUAGE sql VOLATILE AS $$
    SELECT DISTINCT ON (r.thread_id) r.thread_id, r.run_id FROM graphruntime_runs r
    WHERE r.thread_id = ANY(threads) AND r.status IN ('queued', 'running')
    ORDER BY r.thread_id, r.kind <> 'cancel', r.created_at, r.run_id
$$;
