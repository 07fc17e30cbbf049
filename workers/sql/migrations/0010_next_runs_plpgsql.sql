-- graphruntime_next_runs (migration 0009) in PL/pgSQL: a SQL function that is not
-- inlined is parsed and planned again at every call (a fifth of a run's end), while
-- PL/pgSQL keeps its statement's plan for the session. The rest is as before: VOLATILE,
-- so its query runs with a fresh snapshot (it sees every run committed before the
-- calling statement locked the threads' lease rows, and that statement's own changes
-- so far); never inlined; after_locks only orders the call after those rows.
CREATE OR REPLACE FUNCTION graphruntime_next_runs(threads text[], after_locks bigint)
RETURNS TABLE (thread_id text, run_id uuid)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT DISTINCT ON (r.thread_id) r.thread_id, r.run_id FROM graphruntime_runs r
    WHERE r.thread_id = ANY(threads) AND r.status IN ('queued', 'running')
    ORDER BY r.thread_id, r.kind <> 'cancel', r.created_at, r.run_id;
END
$$;
