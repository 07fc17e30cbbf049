-- graphruntime_put_batch (migration 0004) with its fenced puts done in place: the
-- same statement, parameters and rows, without a call of
-- graphruntime_put_checkpoint_fenced per put (each call set up a function and planned
-- nodes for a six-part statement, most of a round's put cost). A fenced put takes its
-- thread's lock (once per run of puts of the same thread: it is held to the end of the
-- transaction), then reads the head: each statement of a VOLATILE function takes a
-- fresh snapshot, so the read sees every put committed before the lock was granted,
-- and the block's own puts before it. Referenced blobs are looked up, and blobs
-- inserted, only for a put that has some.
CREATE OR REPLACE FUNCTION graphruntime_put_batch(
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
    v_locked text;
    v_ok boolean;
    v_head uuid;
    v_head_parent uuid;
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
    v_ok := true;
    v_head := NULL;
    v_head_parent := NULL;
    v_missing := NULL;
    IF p_fenced[i] THEN
        IF p_thread_ids[i] IS DISTINCT FROM v_locked THEN
            PERFORM pg_advisory_xact_lock(hashtext('graphruntime_thread'),
                hashtext(p_thread_ids[i]));
            v_locked := p_thread_ids[i];
        END IF;
        SELECT h.checkpoint_id, h.parent_checkpoint_id INTO v_head, v_head_parent
        FROM graphruntime_checkpoints h
        WHERE h.thread_id = p_thread_ids[i] AND h.checkpoint_ns = p_checkpoint_nss[i]
        ORDER BY h.checkpoint_id DESC LIMIT 1;
        v_ok := v_head IS NOT DISTINCT FROM p_parent_ids[i];
    END IF;
    IF p_ref_ends[i] >= ref_lo THEN
        SELECT array_agg(k.channel) INTO v_missing
        FROM unnest(p_ref_channels[ref_lo:p_ref_ends[i]], p_ref_keys[ref_lo:p_ref_ends[i]])
            AS k (channel, version)
        WHERE NOT EXISTS (
            SELECT 1 FROM graphruntime_blobs b
            WHERE b.thread_id = p_thread_ids[i] AND b.checkpoint_ns = p_checkpoint_nss[i]
                AND b.channel = k.channel AND b.version = k.version
        );
    END IF;
    IF v_ok AND v_missing IS NULL THEN
        IF p_blob_ends[i] >= blob_lo THEN
            INSERT INTO graphruntime_blobs (thread_id, checkpoint_ns, channel, version, type,
                value)
            SELECT p_thread_ids[i], p_checkpoint_nss[i], k.channel, k.version, k.type, k.value
            FROM unnest(p_blob_channels[blob_lo:p_blob_ends[i]],
                p_blob_keys[blob_lo:p_blob_ends[i]], p_blob_types[blob_lo:p_blob_ends[i]],
                p_blob_values[blob_lo:p_blob_ends[i]]) AS k (channel, version, type, value)
            ON CONFLICT DO NOTHING;
        END IF;
        IF p_fenced[i] THEN
            INSERT INTO graphruntime_checkpoints (checkpoint_id, parent_checkpoint_id,
                thread_id, checkpoint_ns, body, blob_versions, metadata)
            VALUES (p_checkpoint_ids[i], p_parent_ids[i], p_thread_ids[i],
                p_checkpoint_nss[i], p_bodies[i], p_blob_versions[i], p_metadata[i])
            ON CONFLICT DO NOTHING;
        ELSE
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
        head_id := v_head::text;
        head_parent_id := v_head_parent::text;
        missing := v_missing;
        RETURN NEXT;
    END IF;
    ref_lo := p_ref_ends[i] + 1;
    blob_lo := p_blob_ends[i] + 1;
END LOOP;
END
$$;
