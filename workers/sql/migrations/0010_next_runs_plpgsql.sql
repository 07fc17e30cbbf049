-- graphruntime_next_runs (migration 0009) in PL/pgSQL, on a generic plan: a SQL
-- function that is not inlined is parsed and planned again at every call (a fifth of a
-- run's end), and PL/pgSQL keeps its statement's plan for the session only when it is
-- generic (planned with the array's actual length, a custom plan always looks cheaper,
-- so it would be planned again at every call too). The rest is as before: VOLATILE,
-- so its query runs with a fresh snapshot (it sees every run committed before the
-- calling statement locked the threads' lease rows, and that statement's own changes
-- so far); never inlined; after_locks only orders the call after those rows.
CREATE OR REPLACE FUNCTION graphruntime_next_runs(threads text[], after_locks bigint)
RETURNS TABLE (thread_id text, run_id uuid)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT DISTINCT ON (r.thread_id) r.thread_id, r.run_id FROM graphruntime_runs r
    WHERE r.thread_id = ANY(threads) AND r.status IN ('queued', 'running')
    ORDER BY r.thread_id, r.kind <> 'cancel', r.created_at, r.run_id;
END
$$;
