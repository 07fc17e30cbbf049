-- Named queries, loaded by checkpoint_pg/_queries.py: each starts at a
-- "-- name: <name>" line and runs to the next one. Always parameterized.

-- name: lock_migrations
-- Serializes migrate() across processes until the transaction ends. Each package's
-- migrations have their own key (checkpoint_pg's is 'graphruntime_migrations').
SELECT pg_advisory_xact_lock(hashtext(%(lock_key)s::text));

-- name: create_migrations_table
-- This and the next queries name each package's migrations table as {table}: the
-- runner composes it as a quoted identifier (psycopg.sql.Identifier), never from input.
CREATE TABLE IF NOT EXISTS {table} (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: migrations_table_exists
SELECT to_regclass(%(table)s::text) IS NOT NULL AS present;

-- name: schema_version
SELECT coalesce(max(version), 0) AS version FROM {table};

-- name: record_migration
INSERT INTO {table} (version) VALUES (%(version)s);

-- name: get_checkpoint
-- One checkpoint (the latest of the namespace when checkpoint_id is NULL) with
-- its blob values and its pending writes in insertion order, in one round trip.
-- task_keys (uuid[]), when not NULL, keeps only the writes of those tasks.
SELECT
    c.checkpoint_id::text AS checkpoint_id,
    c.parent_checkpoint_id::text AS parent_checkpoint_id,
    c.body,
    c.metadata::text AS metadata,
    b.channels AS blob_channels,
    b.types AS blob_types,
    b.values AS blob_values,
    w.task_ids AS write_task_ids,
    w.channels AS write_channels,
    w.types AS write_types,
    w.values AS write_values
FROM graphruntime_checkpoints c
LEFT JOIN LATERAL (
    SELECT array_agg(bl.channel) AS channels, array_agg(bl.type) AS types,
        array_agg(bl.value) AS values
    FROM jsonb_each_text(c.blob_versions) AS k (channel, version)
    JOIN graphruntime_blobs bl
        ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns
        AND bl.channel = k.channel AND bl.version = k.version
) b ON true
LEFT JOIN LATERAL (
    SELECT array_agg(coalesce(wr.task_name, wr.task_id::text) ORDER BY wr.seq) AS task_ids,
        array_agg(wr.channel ORDER BY wr.seq) AS channels,
        array_agg(wr.type ORDER BY wr.seq) AS types,
        array_agg(wr.value ORDER BY wr.seq) AS values
    FROM graphruntime_writes wr
    WHERE wr.thread_id = c.thread_id AND wr.checkpoint_ns = c.checkpoint_ns
        AND wr.checkpoint_id = c.checkpoint_id
        AND (%(task_keys)s::uuid[] IS NULL OR wr.task_id = ANY(%(task_keys)s::uuid[]))
) w ON true
WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = %(checkpoint_ns)s
    AND c.checkpoint_id = coalesce(%(checkpoint_id)s::uuid, (
        SELECT h.checkpoint_id FROM graphruntime_checkpoints h
        WHERE h.thread_id = %(thread_id)s AND h.checkpoint_ns = %(checkpoint_ns)s
        ORDER BY h.checkpoint_id DESC LIMIT 1
    ));

-- name: get_task_writes
-- The pending writes of some tasks of one checkpoint, in insertion order. One index
-- lookup per task: `task_id = ANY(keys)` would be planned as a filter over every write
-- of the checkpoint (thousands in a big fan-out); OFFSET 0 keeps the LATERAL subquery
-- from being flattened into a join that does the same.
SELECT coalesce(w.task_name, w.task_id::text) AS task_id, w.channel, w.type, w.value
FROM unnest(%(task_keys)s::uuid[]) AS k (task_id)
CROSS JOIN LATERAL (
    SELECT wr.seq, wr.task_name, wr.task_id, wr.channel, wr.type, wr.value
    FROM graphruntime_writes wr
    WHERE wr.thread_id = %(thread_id)s AND wr.checkpoint_ns = %(checkpoint_ns)s
        AND wr.checkpoint_id = %(checkpoint_id)s AND wr.task_id = k.task_id
    OFFSET 0
) w
ORDER BY w.seq;

-- name: list_checkpoints
-- Run unprepared: Postgres then plans with the actual parameters and drops the
-- conditions whose parameter is NULL. Pages by the (checkpoint_id, thread_id,
-- checkpoint_ns) key of the last row of the previous page.
-- The metadata filter is key-by-key JSON equality, not containment (@> alone
-- would let {"tags": ["a"]} match ["a", "b"]); @> is kept to narrow first.
SELECT
    c.thread_id,
    c.checkpoint_ns,
    c.checkpoint_id::text AS checkpoint_id,
    c.parent_checkpoint_id::text AS parent_checkpoint_id,
    c.body,
    c.metadata::text AS metadata,
    b.channels AS blob_channels,
    b.types AS blob_types,
    b.values AS blob_values,
    w.task_ids AS write_task_ids,
    w.channels AS write_channels,
    w.types AS write_types,
    w.values AS write_values
FROM graphruntime_checkpoints c
LEFT JOIN LATERAL (
    SELECT array_agg(bl.channel) AS channels, array_agg(bl.type) AS types,
        array_agg(bl.value) AS values
    FROM jsonb_each_text(c.blob_versions) AS k (channel, version)
    JOIN graphruntime_blobs bl
        ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns
        AND bl.channel = k.channel AND bl.version = k.version
) b ON true
LEFT JOIN LATERAL (
    SELECT array_agg(coalesce(wr.task_name, wr.task_id::text) ORDER BY wr.seq) AS task_ids,
        array_agg(wr.channel ORDER BY wr.seq) AS channels,
        array_agg(wr.type ORDER BY wr.seq) AS types,
        array_agg(wr.value ORDER BY wr.seq) AS values
    FROM graphruntime_writes wr
    WHERE wr.thread_id = c.thread_id AND wr.checkpoint_ns = c.checkpoint_ns
        AND wr.checkpoint_id = c.checkpoint_id
) w ON true
WHERE (%(thread_id)s::text IS NULL OR c.thread_id = %(thread_id)s)
    AND (%(checkpoint_ns)s::text IS NULL OR c.checkpoint_ns = %(checkpoint_ns)s)
    AND (%(checkpoint_id)s::uuid IS NULL OR c.checkpoint_id = %(checkpoint_id)s)
    AND (%(before)s::uuid IS NULL OR c.checkpoint_id < %(before)s)
    AND (%(filter)s::jsonb IS NULL OR (
        c.metadata @> %(filter)s
        AND NOT EXISTS (
            SELECT 1 FROM jsonb_each(%(filter)s) AS f (key, value)
            WHERE c.metadata -> f.key IS DISTINCT FROM f.value
        )
    ))
    AND (%(after_id)s::uuid IS NULL
        OR (c.checkpoint_id, c.thread_id, c.checkpoint_ns)
            < (%(after_id)s, %(after_thread_id)s::text, %(after_ns)s::text))
ORDER BY c.checkpoint_id DESC, c.thread_id DESC, c.checkpoint_ns DESC
LIMIT %(page_size)s;

-- name: put_checkpoint_row
-- put_checkpoint for a checkpoint that sends and uses no blob (all its values
-- are inline, the common case): a plain upsert, planned in a few microseconds.
INSERT INTO graphruntime_checkpoints (checkpoint_id, parent_checkpoint_id, thread_id,
    checkpoint_ns, body, blob_versions, metadata)
VALUES (%(checkpoint_id)s, %(parent_checkpoint_id)s, %(thread_id)s, %(checkpoint_ns)s,
    %(body)s, NULL, %(metadata)s::jsonb)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_checkpoint_id = EXCLUDED.parent_checkpoint_id,
    body = EXCLUDED.body,
    blob_versions = EXCLUDED.blob_versions,
    metadata = EXCLUDED.metadata;

-- name: put_checkpoint
-- Stores the new blobs and the checkpoint in one statement (one transaction).
-- Blobs already stored for a (channel, version) are kept as they are. The
-- checkpoint also refers to blobs it does not send (ref_*): if one of them is
-- not stored, nothing is written and the statement returns the channels
-- missing, for the caller to send them and retry.
WITH missing AS (
    SELECT k.channel
    FROM unnest(%(ref_channels)s::text[], %(ref_keys)s::text[]) AS k (channel, version)
    WHERE NOT EXISTS (
        SELECT 1 FROM graphruntime_blobs b
        WHERE b.thread_id = %(thread_id)s AND b.checkpoint_ns = %(checkpoint_ns)s
            AND b.channel = k.channel AND b.version = k.version
    )
), new_blobs AS (
    INSERT INTO graphruntime_blobs (thread_id, checkpoint_ns, channel, version, type, value)
    SELECT %(thread_id)s, %(checkpoint_ns)s, k.channel, k.version, k.type, k.value
    FROM unnest(%(blob_channels)s::text[], %(blob_keys)s::text[], %(blob_types)s::text[],
        %(blob_values)s::bytea[]) AS k (channel, version, type, value)
    WHERE NOT EXISTS (SELECT 1 FROM missing)
    ON CONFLICT DO NOTHING
), new_checkpoint AS (
    INSERT INTO graphruntime_checkpoints (checkpoint_id, parent_checkpoint_id, thread_id,
        checkpoint_ns, body, blob_versions, metadata)
    SELECT %(checkpoint_id)s, %(parent_checkpoint_id)s, %(thread_id)s, %(checkpoint_ns)s,
        %(body)s, %(blob_versions)s::jsonb, %(metadata)s::jsonb
    WHERE NOT EXISTS (SELECT 1 FROM missing)
    ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
        parent_checkpoint_id = EXCLUDED.parent_checkpoint_id,
        body = EXCLUDED.body,
        blob_versions = EXCLUDED.blob_versions,
        metadata = EXCLUDED.metadata
)
SELECT true AS ok, NULL::text AS head_id, NULL::text AS head_parent_id,
    (SELECT array_agg(channel) FROM missing) AS missing;

-- name: put_checkpoint_fenced
-- As put_checkpoint, but only if the namespace's latest checkpoint is still the
-- parent, checked under the thread's lock (migration 0002). Returns the head it saw.
-- graphruntime_put_batch (migration 0005) does the same check in place: change both.
SELECT * FROM graphruntime_put_checkpoint_fenced(
    %(thread_id)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(parent_checkpoint_id)s,
    %(body)s, %(blob_versions)s::jsonb, %(metadata)s::jsonb,
    %(ref_channels)s::text[], %(ref_keys)s::text[],
    %(blob_channels)s::text[], %(blob_keys)s::text[], %(blob_types)s::text[],
    %(blob_values)s::bytea[]);

-- name: put_batch
-- A block's writes and puts (of any number of threads) in one statement (migration
-- 0004, 0005): one row per put not stored cleanly (refused, or missing a referenced blob).
SELECT * FROM graphruntime_put_batch(
    %(relaxed)s::boolean, %(group_ends)s::integer[], %(group_upsert)s::boolean[],
    %(write_thread_ids)s::text[], %(write_checkpoint_nss)s::text[],
    %(write_checkpoint_ids)s::uuid[], %(write_task_ids)s::uuid[],
    %(write_task_names)s::text[], %(write_task_paths)s::text[], %(write_idxs)s::integer[],
    %(write_channels)s::text[], %(write_types)s::text[], %(write_values)s::bytea[],
    %(thread_ids)s::text[], %(checkpoint_nss)s::text[], %(checkpoint_ids)s::uuid[],
    %(parent_ids)s::uuid[], %(bodies)s::bytea[], %(blob_versions)s::jsonb[],
    %(metadata)s::jsonb[], %(fenced)s::boolean[],
    %(ref_ends)s::integer[], %(ref_channels)s::text[], %(ref_keys)s::text[],
    %(blob_ends)s::integer[], %(blob_channels)s::text[], %(blob_keys)s::text[],
    %(blob_types)s::text[], %(blob_values)s::bytea[]);

-- name: async_commit
-- First statement of a transaction whose commit need not wait for the WAL flush.
SET LOCAL synchronous_commit TO OFF;

-- name: insert_writes
-- First write wins: a second delivery of the same task changes nothing.
-- The rows placeholder becomes write_row once per write (composed by the saver): scalar
-- parameters cost the client half the CPU of array parameters.
INSERT INTO graphruntime_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_name,
    task_path, idx, channel, type, value)
VALUES {rows}
ON CONFLICT DO NOTHING;

-- name: upsert_writes
-- Control writes (all channels in WRITES_IDX_MAP) replace the stored row but
-- keep its seq, so the write keeps its place in the insertion order.
INSERT INTO graphruntime_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_name,
    task_path, idx, channel, type, value)
VALUES {rows}
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET
    channel = EXCLUDED.channel,
    type = EXCLUDED.type,
    value = EXCLUDED.value;

-- name: write_row
(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)

-- name: delta_history
-- get_delta_channel_history in one statement: walk the parent chain of a checkpoint
-- (the latest of the namespace when checkpoint_id is NULL), excluding the checkpoint
-- itself, and return, per requested channel, the writes saved on each ancestor down
-- to the one where the channel's walk ends, plus what ends it.
--
-- chain.walking: the channels whose walk reaches this ancestor (its writes count);
-- chain.ending: those of them whose walk ends here. A walk ends at a blob
-- (blob_versions has the channel; the saver always stores a DeltaSnapshot as a
-- blob). A value can also be inline in the body, which SQL cannot read; so unless
-- %(thorough)s, a walk also ends at an ancestor whose metadata does not count the
-- channel in counters_since_delta_snapshot (the runtime counts every DeltaChannel in
-- every checkpoint that holds no snapshot of it): such an ancestor comes back with
-- its body, for the saver to look; if the value is not there, the saver asks again,
-- thorough, from that ancestor. A thorough walk ends at blobs only and returns every
-- ancestor's body.
--
-- Rows, by kind: 'w' a write (depth = the ancestor's distance from the target),
-- 's' a blob ending a walk, 'b' an ancestor's body, with its id and the channels it
-- may end (thorough: every channel walking there).
WITH RECURSIVE target AS (
    SELECT t.parent_checkpoint_id
    FROM graphruntime_checkpoints t
    WHERE t.thread_id = %(thread_id)s AND t.checkpoint_ns = %(checkpoint_ns)s
        AND t.checkpoint_id = coalesce(%(checkpoint_id)s::uuid, (
            SELECT h.checkpoint_id FROM graphruntime_checkpoints h
            WHERE h.thread_id = %(thread_id)s AND h.checkpoint_ns = %(checkpoint_ns)s
            ORDER BY h.checkpoint_id DESC LIMIT 1
        ))
), chain (checkpoint_id, parent_id, depth, blob_versions, walking, ending) AS (
    SELECT a.checkpoint_id, a.parent_checkpoint_id, 1, a.blob_versions, w.walking,
        CASE WHEN NOT (%(thorough)s::boolean OR coalesce(a.blob_versions ?| w.walking, false))
                AND coalesce(a.metadata -> 'counters_since_delta_snapshot' ?& w.walking, false)
            THEN '{}'::text[]  -- the common ancestor: no walk ends here
            ELSE ARRAY(
                SELECT ch FROM unnest(w.walking) AS ch
                WHERE coalesce(a.blob_versions ? ch, false)
                    OR NOT (%(thorough)s::boolean
                        OR coalesce(a.metadata -> 'counters_since_delta_snapshot' ? ch, false))
            )
        END
    FROM target t
    CROSS JOIN LATERAL (SELECT %(channels)s::text[] AS walking) w
    CROSS JOIN LATERAL (
        SELECT p.checkpoint_id, p.parent_checkpoint_id, p.blob_versions, p.metadata
        FROM graphruntime_checkpoints p
        WHERE p.thread_id = %(thread_id)s AND p.checkpoint_ns = %(checkpoint_ns)s
            AND p.checkpoint_id = t.parent_checkpoint_id
        OFFSET 0
    ) a
    UNION ALL
    SELECT a.checkpoint_id, a.parent_checkpoint_id, c.depth + 1, a.blob_versions, w.walking,
        CASE WHEN NOT (%(thorough)s::boolean OR coalesce(a.blob_versions ?| w.walking, false))
                AND coalesce(a.metadata -> 'counters_since_delta_snapshot' ?& w.walking, false)
            THEN '{}'::text[]  -- the common ancestor: no walk ends here
            ELSE ARRAY(
                SELECT ch FROM unnest(w.walking) AS ch
                WHERE coalesce(a.blob_versions ? ch, false)
                    OR NOT (%(thorough)s::boolean
                        OR coalesce(a.metadata -> 'counters_since_delta_snapshot' ? ch, false))
            )
        END
    FROM chain c
    CROSS JOIN LATERAL (
        SELECT CASE WHEN cardinality(c.ending) = 0 THEN c.walking
            ELSE ARRAY(SELECT ch FROM unnest(c.walking) AS ch WHERE ch <> ALL (c.ending))
        END AS walking
    ) w
    -- one index lookup per ancestor (OFFSET 0 keeps the planner from hashing the table)
    CROSS JOIN LATERAL (
        SELECT p.checkpoint_id, p.parent_checkpoint_id, p.blob_versions, p.metadata
        FROM graphruntime_checkpoints p
        WHERE p.thread_id = %(thread_id)s AND p.checkpoint_ns = %(checkpoint_ns)s
            AND p.checkpoint_id = c.parent_id
        OFFSET 0
    ) a
    WHERE cardinality(w.walking) > 0
)
SELECT 'w' AS kind, c.depth, wr.channel, coalesce(wr.task_name, wr.task_id::text) AS task_id,
    wr.task_path, wr.idx, wr.type, wr.value, NULL::text AS checkpoint_id,
    NULL::text[] AS channels
FROM chain c
CROSS JOIN LATERAL (
    SELECT x.channel, x.task_name, x.task_id, x.task_path, x.idx, x.type, x.value
    FROM graphruntime_writes x
    WHERE x.thread_id = %(thread_id)s AND x.checkpoint_ns = %(checkpoint_ns)s
        AND x.checkpoint_id = c.checkpoint_id
    OFFSET 0
) wr
WHERE wr.channel = ANY (c.walking)
UNION ALL
SELECT 's', c.depth, e.ch, NULL, NULL, NULL, bl.type, bl.value, NULL, NULL
FROM chain c
CROSS JOIN LATERAL unnest(c.ending) AS e (ch)
CROSS JOIN LATERAL (
    SELECT b.type, b.value FROM graphruntime_blobs b
    WHERE b.thread_id = %(thread_id)s AND b.checkpoint_ns = %(checkpoint_ns)s
        AND b.channel = e.ch AND b.version = c.blob_versions ->> e.ch
    OFFSET 0
) bl
UNION ALL
SELECT 'b', c.depth, NULL, NULL, NULL, NULL, NULL, a.body, c.checkpoint_id::text,
    CASE WHEN %(thorough)s::boolean THEN c.walking ELSE c.ending END
FROM chain c
CROSS JOIN LATERAL (
    SELECT p.body FROM graphruntime_checkpoints p
    WHERE p.thread_id = %(thread_id)s AND p.checkpoint_ns = %(checkpoint_ns)s
        AND p.checkpoint_id = c.checkpoint_id
    OFFSET 0
) a
WHERE %(thorough)s::boolean OR EXISTS (
    SELECT 1 FROM unnest(c.ending) AS e (ch) WHERE NOT coalesce(c.blob_versions ? e.ch, false)
);

-- name: delete_thread
WITH deleted_writes AS (
    DELETE FROM graphruntime_writes WHERE thread_id = %(thread_id)s RETURNING 1
), deleted_blobs AS (
    DELETE FROM graphruntime_blobs WHERE thread_id = %(thread_id)s RETURNING 1
), deleted_checkpoints AS (
    DELETE FROM graphruntime_checkpoints WHERE thread_id = %(thread_id)s RETURNING 1
)
SELECT
    (SELECT count(*) FROM deleted_checkpoints) AS checkpoints,
    (SELECT count(*) FROM deleted_writes) AS writes,
    (SELECT count(*) FROM deleted_blobs) AS blobs;

-- name: prune_thread
-- Keeps the keep_last newest checkpoints of every namespace of a thread, with
-- their writes and the blobs they reference; deletes the other checkpoints,
-- their writes and the blobs no kept checkpoint references. A subgraph call's
-- namespace (one with ":") goes entirely when the root checkpoint its newest
-- checkpoint was taken under (metadata.parents[""]) is deleted. A kept
-- checkpoint whose parent is deleted is left without a parent. One statement:
-- every part reads the same snapshot, so rows committed meanwhile are kept.
-- A thread that uses a DeltaChannel (its metadata counts snapshots) is left
-- whole and reported (delta_thread): its values are rebuilt from older
-- checkpoints' writes.
WITH delta AS (
    SELECT EXISTS (
        SELECT 1 FROM graphruntime_checkpoints
        WHERE thread_id = %(thread_id)s AND metadata ? 'counters_since_delta_snapshot'
    ) AS used
), ranked AS (
    SELECT checkpoint_ns, checkpoint_id, metadata -> 'parents' ->> '' AS root,
        row_number() OVER (PARTITION BY checkpoint_ns ORDER BY checkpoint_id DESC) AS rank
    FROM graphruntime_checkpoints
    WHERE thread_id = %(thread_id)s AND NOT (SELECT used FROM delta)
), dropped_roots AS (
    SELECT checkpoint_id::text AS checkpoint_id FROM ranked
    WHERE checkpoint_ns = '' AND rank > %(keep_last)s
), dropped_namespaces AS (
    SELECT checkpoint_ns FROM ranked
    WHERE rank = 1 AND strpos(checkpoint_ns, ':') > 0
        AND root IN (SELECT checkpoint_id FROM dropped_roots)
), doomed AS (
    SELECT checkpoint_ns, checkpoint_id FROM ranked
    WHERE rank > %(keep_last)s
        OR checkpoint_ns IN (SELECT checkpoint_ns FROM dropped_namespaces)
), deleted_writes AS (
    DELETE FROM graphruntime_writes w USING doomed d
    WHERE w.thread_id = %(thread_id)s AND w.checkpoint_ns = d.checkpoint_ns
        AND w.checkpoint_id = d.checkpoint_id
    RETURNING 1
), deleted_checkpoints AS (
    DELETE FROM graphruntime_checkpoints c USING doomed d
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = d.checkpoint_ns
        AND c.checkpoint_id = d.checkpoint_id
    RETURNING 1
), orphaned AS (
    UPDATE graphruntime_checkpoints c SET parent_checkpoint_id = NULL
    FROM doomed d
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = d.checkpoint_ns
        AND c.parent_checkpoint_id = d.checkpoint_id
        AND NOT EXISTS (
            SELECT 1 FROM doomed x
            WHERE x.checkpoint_ns = c.checkpoint_ns AND x.checkpoint_id = c.checkpoint_id
        )
), kept_references AS (
    SELECT c.checkpoint_ns, k.channel, k.version
    FROM graphruntime_checkpoints c
    CROSS JOIN LATERAL jsonb_each_text(c.blob_versions) AS k (channel, version)
    WHERE c.thread_id = %(thread_id)s
        AND NOT EXISTS (
            SELECT 1 FROM doomed x
            WHERE x.checkpoint_ns = c.checkpoint_ns AND x.checkpoint_id = c.checkpoint_id
        )
), deleted_blobs AS (
    DELETE FROM graphruntime_blobs b
    WHERE b.thread_id = %(thread_id)s
        AND b.checkpoint_ns IN (SELECT checkpoint_ns FROM doomed)
        AND NOT EXISTS (
            SELECT 1 FROM kept_references r
            WHERE r.checkpoint_ns = b.checkpoint_ns AND r.channel = b.channel
                AND r.version = b.version
        )
    RETURNING 1
)
SELECT
    (SELECT count(*) FROM deleted_checkpoints) AS checkpoints,
    (SELECT count(*) FROM deleted_writes) AS writes,
    (SELECT count(*) FROM deleted_blobs) AS blobs,
    (SELECT used FROM delta) AS delta_thread;

-- name: shallow_trim
-- ShallowPostgresSaver after a put: the namespace keeps only the checkpoint just stored
-- (without a parent: history ends there), with its writes and the blobs it references.
WITH doomed AS (
    SELECT c.checkpoint_id FROM graphruntime_checkpoints c
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = %(checkpoint_ns)s
        AND c.checkpoint_id <> %(checkpoint_id)s
), deleted_writes AS (
    DELETE FROM graphruntime_writes w USING doomed d
    WHERE w.thread_id = %(thread_id)s AND w.checkpoint_ns = %(checkpoint_ns)s
        AND w.checkpoint_id = d.checkpoint_id
), deleted_checkpoints AS (
    DELETE FROM graphruntime_checkpoints c USING doomed d
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = %(checkpoint_ns)s
        AND c.checkpoint_id = d.checkpoint_id
), orphaned AS (
    UPDATE graphruntime_checkpoints c SET parent_checkpoint_id = NULL
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = %(checkpoint_ns)s
        AND c.checkpoint_id = %(checkpoint_id)s AND c.parent_checkpoint_id IS NOT NULL
)
DELETE FROM graphruntime_blobs b
WHERE b.thread_id = %(thread_id)s AND b.checkpoint_ns = %(checkpoint_ns)s
    AND NOT EXISTS (
        SELECT 1 FROM graphruntime_checkpoints c
        CROSS JOIN LATERAL jsonb_each_text(c.blob_versions) AS k (channel, version)
        WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = %(checkpoint_ns)s
            AND c.checkpoint_id = %(checkpoint_id)s
            AND k.channel = b.channel AND k.version = b.version
    );
