-- A fenced put in one statement (one round trip, no explicit transaction).
--
-- The fence needs the thread's lock to be held *before* the head is read, and a
-- statement reads with the snapshot taken when it starts. A VOLATILE function
-- takes a fresh snapshot for each of its statements, so here the lock is taken
-- first and the check-and-insert then sees every put committed before it got
-- the lock. The lock is released when the caller's transaction ends. PL/pgSQL,
-- not SQL: it keeps its statements' plans (a SQL function re-plans every call,
-- which doubled the put's cost).

CREATE FUNCTION graphruntime_put_checkpoint_fenced(
    p_thread_id text,
    p_checkpoint_ns text,
    p_checkpoint_id uuid,
    p_parent_checkpoint_id uuid,
    p_body bytea,
    p_blob_versions jsonb,
    p_metadata jsonb,
    p_ref_channels text[],
    p_ref_keys text[],
    p_blob_channels text[],
    p_blob_keys text[],
    p_blob_types text[],
    p_blob_values bytea[]
) RETURNS TABLE (ok boolean, head_id text, head_parent_id text, missing text[])
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
BEGIN
PERFORM pg_advisory_xact_lock(hashtext('graphruntime_thread'), hashtext(p_thread_id));

RETURN QUERY WITH head AS (
    SELECT h.checkpoint_id, h.parent_checkpoint_id FROM graphruntime_checkpoints h
    WHERE h.thread_id = p_thread_id AND h.checkpoint_ns = p_checkpoint_ns
    ORDER BY h.checkpoint_id DESC LIMIT 1
), verdict AS (
    SELECT (SELECT checkpoint_id FROM head) IS NOT DISTINCT FROM p_parent_checkpoint_id AS ok
), absent AS (
    SELECT k.channel
    FROM unnest(p_ref_channels, p_ref_keys) AS k (channel, version)
    WHERE NOT EXISTS (
        SELECT 1 FROM graphruntime_blobs b
        WHERE b.thread_id = p_thread_id AND b.checkpoint_ns = p_checkpoint_ns
            AND b.channel = k.channel AND b.version = k.version
    )
), go AS (
    SELECT (SELECT v.ok FROM verdict v) AND NOT EXISTS (SELECT 1 FROM absent) AS go
), new_blobs AS (
    INSERT INTO graphruntime_blobs (thread_id, checkpoint_ns, channel, version, type, value)
    SELECT p_thread_id, p_checkpoint_ns, k.channel, k.version, k.type, k.value
    FROM unnest(p_blob_channels, p_blob_keys, p_blob_types, p_blob_values)
        AS k (channel, version, type, value)
    WHERE (SELECT g.go FROM go g)
    ON CONFLICT DO NOTHING
), new_checkpoint AS (
    INSERT INTO graphruntime_checkpoints (checkpoint_id, parent_checkpoint_id, thread_id,
        checkpoint_ns, body, blob_versions, metadata)
    SELECT p_checkpoint_id, p_parent_checkpoint_id, p_thread_id, p_checkpoint_ns,
        p_body, p_blob_versions, p_metadata
    WHERE (SELECT g.go FROM go g)
    ON CONFLICT DO NOTHING
)
SELECT
    (SELECT v.ok FROM verdict v),
    (SELECT h.checkpoint_id::text FROM head h),
    (SELECT h.parent_checkpoint_id::text FROM head h),
    (SELECT array_agg(a.channel) FROM absent a);
END
$$;
