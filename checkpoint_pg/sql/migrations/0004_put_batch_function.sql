-- A block of puts and writes of any number of threads in one statement
-- (PostgresSaver.pipelined and batched): a statement is atomic on its own, so a block
-- with no read inside needs no BEGIN and COMMIT either.
--
-- The writes come first, in groups, each one INSERT in the order given (seq is the
-- insertion order): an insert-only group may hold several tasks' rows (the first write
-- of a row wins); a group of control writes (p_group_upsert) is one task's, as one
-- statement cannot upsert a row twice. Then the checkpoints, one after another, in the
-- order given, each as its own put would store it: a fenced one through
-- graphruntime_put_checkpoint_fenced (each of a function's statements sees the ones
-- before, so a thread's second put is judged against its first), a plain one as the
-- put_checkpoint query does. Checkpoint i's referenced blobs are
-- p_ref_*[p_ref_ends[i-1]+1 : p_ref_ends[i]] and its blobs sent p_blob_*[...] likewise
-- (p_*_ends are running totals); group g's writes are p_write_*[p_group_ends[g-1]+1 :
-- p_group_ends[g]].
--
-- One row per put that was not stored cleanly (put_index, 1-based): refused (ok false,
-- with the head it saw) or missing a referenced blob (nothing of it written). The
-- caller judges them as it judges one put's row. p_relaxed: the transaction commits
-- without waiting for the WAL flush (SET LOCAL synchronous_commit, for this
-- transaction only: with no transaction block, this statement's).

CREATE FUNCTION graphruntime_put_batch(
    p_relaxed boolean,
    p_group_ends integer[],
    p_group_upsert boolean[],
    p_write_thread_ids text[],
    p_write_checkpoint_nss text[],
    p_write_checkpoint_ids uuid[],
    p_write_task_ids uuid[],
    p_write_task_names text[],
    p_write_task_paths text[],
    p_write_idxs integer[],
    p_write_channels text[],
    p_write_types text[],
    p_write_values bytea[],
    p_thread_ids text[],
    p_checkpoint_nss text[],
    p_checkpoint_ids uuid[],
    p_parent_ids uuid[],
    p_bodies bytea[],
    p_blob_versions jsonb[],
    p_metadata jsonb[],
    p_fenced boolean[],
    p_ref_ends integer[],
    p_ref_channels text[],
    p_ref_keys text[],
    p_blob_ends integer[],
    p_blob_channels text[],
    p_blob_keys text[],
    p_blob_types text[],
    p_blob_values bytea[]
) RETURNS TABLE (put_index integer, ok boolean, head_id text, head_parent_id text,
    missing text[])
LANGUAGE plpgsql VOLATILE
AS $$
#variable_conflict use_column
DECLARE
    lo integer := 1;
    hi integer;
    ref_lo integer := 1;
    blob_lo integer := 1;
    v_ok boolean;
    v_head text;
    v_head_parent text;
    v_missing text[];
BEGIN
IF p_relaxed THEN
    PERFORM set_config('synchronous_commit', 'off', true);
END IF;

FOR g IN 1 .. coalesce(cardinality(p_group_ends), 0) LOOP
    hi := p_group_ends[g];
    IF p_group_upsert[g] THEN
        INSERT INTO graphruntime_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,
            task_name, task_path, idx, channel, type, value)
        SELECT * FROM unnest(p_write_thread_ids[lo:hi], p_write_checkpoint_nss[lo:hi],
            p_write_checkpoint_ids[lo:hi], p_write_task_ids[lo:hi], p_write_task_names[lo:hi],
            p_write_task_paths[lo:hi], p_write_idxs[lo:hi], p_write_channels[lo:hi],
            p_write_types[lo:hi], p_write_values[lo:hi])
        ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
            channel = EXCLUDED.channel,
            type = EXCLUDED.type,
            value = EXCLUDED.value;
    ELSE
        INSERT INTO graphruntime_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,
            task_name, task_path, idx, channel, type, value)
        SELECT * FROM unnest(p_write_thread_ids[lo:hi], p_write_checkpoint_nss[lo:hi],
            p_write_checkpoint_ids[lo:hi], p_write_task_ids[lo:hi], p_write_task_names[lo:hi],
            p_write_task_paths[lo:hi], p_write_idxs[lo:hi], p_write_channels[lo:hi],
            p_write_types[lo:hi], p_write_values[lo:hi])
        ON CONFLICT DO NOTHING;
    END IF;
    lo := hi + 1;
END LOOP;

FOR i IN 1 .. coalesce(cardinality(p_checkpoint_ids), 0) LOOP
    IF p_fenced[i] THEN
        SELECT f.ok, f.head_id, f.head_parent_id, f.missing
        INTO v_ok, v_head, v_head_parent, v_missing
        FROM graphruntime_put_checkpoint_fenced(p_thread_ids[i], p_checkpoint_nss[i],
            p_checkpoint_ids[i], p_parent_ids[i], p_bodies[i], p_blob_versions[i],
            p_metadata[i], p_ref_channels[ref_lo:p_ref_ends[i]],
            p_ref_keys[ref_lo:p_ref_ends[i]], p_blob_channels[blob_lo:p_blob_ends[i]],
            p_blob_keys[blob_lo:p_blob_ends[i]], p_blob_types[blob_lo:p_blob_ends[i]],
            p_blob_values[blob_lo:p_blob_ends[i]]) AS f;
    ELSE
        v_ok := true;
        v_head := NULL;
        v_head_parent := NULL;
        SELECT array_agg(k.channel) INTO v_missing
        FROM unnest(p_ref_channels[ref_lo:p_ref_ends[i]], p_ref_keys[ref_lo:p_ref_ends[i]])
            AS k (channel, version)
        WHERE NOT EXISTS (
            SELECT 1 FROM graphruntime_blobs b
            WHERE b.thread_id = p_thread_ids[i] AND b.checkpoint_ns = p_checkpoint_nss[i]
                AND b.channel = k.channel AND b.version = k.version
        );
        IF v_missing IS NULL THEN
            INSERT INTO graphruntime_blobs (thread_id, checkpoint_ns, channel, version, type,
                value)
            SELECT p_thread_ids[i], p_checkpoint_nss[i], k.channel, k.version, k.type, k.value
            FROM unnest(p_blob_channels[blob_lo:p_blob_ends[i]],
                p_blob_keys[blob_lo:p_blob_ends[i]], p_blob_types[blob_lo:p_blob_ends[i]],
                p_blob_values[blob_lo:p_blob_ends[i]]) AS k (channel, version, type, value)
            ON CONFLICT DO NOTHING;
            INSERT INTO graphruntime_checkpoints (checkpoint_id, parent_checkpoint_id,
                thread_id, checkpoint_ns, body, blob_versions, metadata)
            VALUES (p_checkpoint_ids[i], p_parent_ids[i], p_thread_ids[i],
                p_checkpoint_nss[i], p_bodies[i], p_blob_versions[i], p_metadata[i])
            ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
                parent_checkpoint_id = EXCLUDED.parent_checkpoint_id,
                body = EXCLUDED.body,
                blob_versions = EXCLUDED.blob_versions,
                metadata = EXCLUDED.metadata;
        END IF;
    END IF;
    IF NOT v_ok OR v_missing IS NOT NULL THEN
        put_index := i;
        ok := v_ok;
        head_id := v_head;
        head_parent_id := v_head_parent;
        missing := v_missing;
        RETURN NEXT;
    END IF;
    ref_lo := p_ref_ends[i] + 1;
    blob_lo := p_blob_ends[i] + 1;
END LOOP;
END
$$;
