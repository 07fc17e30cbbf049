-- Named queries of checkpoint_pg.PostgresStore, loaded by checkpoint_pg/_store_queries.py:
-- each starts at a "-- name: <name>" line and runs to the next one. Always parameterized.
--
-- Time: %(now)s is the store's clock when it has one (tests drive TTLs with it), else
-- NULL and the database's now(). An item is expired once expires_at <= now; with
-- %(omit_expired)s reads skip expired items the sweep has not deleted yet.
--
-- {where} in a query and {path}, {value}, {op} in a fragment are composed by the store
-- with psycopg.sql from the fragments below, named placeholders and a fixed operator
-- list: never from input.

-- name: store_get
-- Any number of (prefix, key) pairs in one round trip; ord is the pair's position.
WITH wanted AS (
    SELECT w.prefix, w.key, w.refresh, w.ord
    FROM unnest(%(prefixes)s::text[], %(keys)s::text[], %(refresh)s::boolean[])
        WITH ORDINALITY AS w (prefix, key, refresh, ord)
),
found AS (
    SELECT w.ord, w.refresh, s.prefix, s.key, s.value, s.created_at, s.updated_at
    FROM wanted w
    JOIN graphruntime_store s ON s.prefix = w.prefix AND s.key = w.key
    WHERE NOT %(omit_expired)s OR s.expires_at IS NULL
        OR s.expires_at > coalesce(%(now)s::timestamptz, now())
),
-- rows to refresh are locked in key order first, skipping those a concurrent batch
-- holds (it writes or refreshes them itself): a read never waits, so it cannot deadlock
locked AS (
    SELECT s.prefix, s.key FROM graphruntime_store s
    JOIN found f ON s.prefix = f.prefix AND s.key = f.key
    WHERE f.refresh AND s.ttl_minutes IS NOT NULL
    ORDER BY s.prefix, s.key
    FOR UPDATE OF s SKIP LOCKED
),
refreshed AS (
    UPDATE graphruntime_store s
    SET expires_at = coalesce(%(now)s::timestamptz, now()) + s.ttl_minutes * interval '1 minute'
    FROM locked l
    WHERE s.prefix = l.prefix AND s.key = l.key
)
SELECT f.ord, f.value, f.created_at, f.updated_at FROM found f;

-- name: store_put
-- Upsert many items (one row per (prefix, key): the caller dedups). An item replacing
-- an expired one is new: it gets a new created_at.
INSERT INTO graphruntime_store AS s
    (prefix, key, value, created_at, updated_at, ttl_minutes, expires_at)
SELECT p.prefix, p.key, p.value::jsonb, c.now, c.now, p.ttl,
    c.now + p.ttl * interval '1 minute'
FROM unnest(%(prefixes)s::text[], %(keys)s::text[], %(values)s::text[], %(ttls)s::float8[])
    AS p (prefix, key, value, ttl)
CROSS JOIN (SELECT coalesce(%(now)s::timestamptz, now()) AS now) AS c
ON CONFLICT (prefix, key) DO UPDATE SET
    value = excluded.value,
    created_at = CASE
        WHEN s.expires_at IS NOT NULL AND s.expires_at <= excluded.updated_at
            THEN excluded.created_at
        ELSE s.created_at
    END,
    updated_at = excluded.updated_at,
    ttl_minutes = excluded.ttl_minutes,
    expires_at = excluded.expires_at;

-- name: store_lock
-- Taken by a run of puts of several items before it deletes or upserts any: a
-- transaction-scoped advisory lock per item, in the order of the locks' ids. Row locks
-- alone cannot order writers: a row inserted or deleted by another batch between two
-- statements (read committed) escapes a row lock taken first. Under these locks, runs of
-- puts sharing an item take their turns, and readers that refresh TTLs never wait
-- (SKIP LOCKED), so no cycle of waits can form.
SELECT pg_advisory_xact_lock(hashtext('graphruntime_store'), l.id)
FROM (
    SELECT DISTINCT hashtext(w.prefix || '/' || w.key) AS id
    FROM unnest(%(prefixes)s::text[], %(keys)s::text[]) AS w (prefix, key)
    ORDER BY id
) AS l;

-- name: store_delete
DELETE FROM graphruntime_store s
USING unnest(%(prefixes)s::text[], %(keys)s::text[]) AS d (prefix, key)
WHERE s.prefix = d.prefix AND s.key = d.key;

-- name: store_search
-- Newest first; items written together (one batch shares a timestamp) by namespace
-- (label by label) and key, so pages are stable.
WITH hits AS (
    SELECT s.prefix, s.key, s.value, s.created_at, s.updated_at
    FROM graphruntime_store s
    WHERE (NOT %(omit_expired)s OR s.expires_at IS NULL
            OR s.expires_at > coalesce(%(now)s::timestamptz, now()))
        AND {where}
    ORDER BY s.updated_at DESC, string_to_array(s.prefix, '.'), s.key
    LIMIT %(limit)s OFFSET %(offset)s
),
{refresh}
SELECT h.prefix, h.key, h.value, h.created_at, h.updated_at
FROM hits h
ORDER BY h.updated_at DESC, string_to_array(h.prefix, '.'), h.key;

-- name: store_list_namespaces
-- Distinct namespaces (as text[]) cut to max_depth labels, sorted label by label.
SELECT t.namespace
FROM (
    SELECT DISTINCT (string_to_array(s.prefix, '.'))[1:%(max_depth)s] AS namespace
    FROM graphruntime_store s
    WHERE (NOT %(omit_expired)s OR s.expires_at IS NULL
            OR s.expires_at > coalesce(%(now)s::timestamptz, now()))
        AND {where}
) AS t
ORDER BY t.namespace
LIMIT %(limit)s OFFSET %(offset)s;

-- name: store_sweep
-- Deletes the expired items (their embeddings go with them); returns how many.
WITH expired AS (  -- locked in key order, as the reads that refresh lock them
    SELECT prefix, key FROM graphruntime_store
    WHERE expires_at <= coalesce(%(now)s::timestamptz, now())
    ORDER BY prefix, key
    FOR UPDATE SKIP LOCKED
), swept AS (
    DELETE FROM graphruntime_store s USING expired e
    WHERE s.prefix = e.prefix AND s.key = e.key
    RETURNING 1
)
SELECT count(*) AS swept FROM swept;

-- name: store_where_all
TRUE

-- name: store_where_namespace
-- One namespace and everything below it: a range over the primary key.
(s.prefix = %(ns)s OR (s.prefix >= %(ns_below)s AND s.prefix < %(ns_after)s))

-- name: store_where_prefix_pattern
-- The namespace starts with the pattern's labels (a NULL label: any label).
(cardinality(string_to_array(s.prefix, '.')) >= cardinality(%(prefix_pattern)s::text[])
    AND NOT EXISTS (
        SELECT 1 FROM unnest(%(prefix_pattern)s::text[]) WITH ORDINALITY AS p (label, i)
        WHERE p.label IS NOT NULL AND p.label <> (string_to_array(s.prefix, '.'))[p.i]
    ))

-- name: store_where_suffix_pattern
-- The namespace ends with the pattern's labels (a NULL label: any label).
(cardinality(string_to_array(s.prefix, '.')) >= cardinality(%(suffix_pattern)s::text[])
    AND NOT EXISTS (
        SELECT 1 FROM unnest(%(suffix_pattern)s::text[]) WITH ORDINALITY AS p (label, i)
        WHERE p.label IS NOT NULL
            AND p.label <> (string_to_array(s.prefix, '.'))[
                cardinality(string_to_array(s.prefix, '.'))
                - cardinality(%(suffix_pattern)s::text[]) + p.i::integer
            ]
    ))

-- name: store_filter_eq
-- JSON equality (1 = 1.0, true <> 1); a missing field equals nothing.
(s.value #> {path}::text[]) = {value}::jsonb

-- name: store_filter_ne
-- A missing field is "not equal" too.
(s.value #> {path}::text[]) IS DISTINCT FROM {value}::jsonb

-- name: store_filter_object
jsonb_typeof(s.value #> {path}::text[]) = 'object'

-- name: store_filter_number
-- Numbers compare numerically; fields of another kind never match.
(jsonb_typeof(s.value #> {path}::text[]) = 'number'
    AND (s.value #> {path}::text[]) {op} {value}::jsonb)

-- name: store_filter_string
-- Strings compare by code point (collation "C"), as Python compares str.
(jsonb_typeof(s.value #> {path}::text[]) = 'string'
    AND (s.value #>> {path}::text[]) COLLATE "C" {op} {value}::text COLLATE "C")

-- name: store_pgvector_available
-- Whether the server can create the pgvector extension, and its version.
SELECT (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS available,
    (SELECT extversion FROM pg_extension WHERE extname = 'vector') AS installed;

-- name: store_vectors_delete
-- The embeddings of the items being written: a put replaces them all (a put with
-- index=False leaves the item without any).
DELETE FROM graphruntime_store_vectors v
USING unnest(%(prefixes)s::text[], %(keys)s::text[]) AS d (prefix, key)
WHERE v.prefix = d.prefix AND v.key = d.key;

-- name: store_vectors_insert
INSERT INTO graphruntime_store_vectors (prefix, key, field_name, embedding)
SELECT e.prefix, e.key, e.field_name, e.embedding::vector
FROM unnest(%(prefixes)s::text[], %(keys)s::text[], %(fields)s::text[],
    %(embeddings)s::text[]) AS e (prefix, key, field_name, embedding)
ON CONFLICT (prefix, key, field_name) DO UPDATE SET embedding = EXCLUDED.embedding;

-- name: store_vector_search
-- Items ranked by their nearest embedding to the query vector (distance ascending; the
-- score reported is higher for nearer), then paged. Items without embeddings (put with
-- index=False) are not found. Exact: every matching item's embeddings are compared.
WITH nearest AS (
    SELECT DISTINCT ON (s.prefix, s.key)
        s.prefix, s.key, s.value, s.created_at, s.updated_at, {distance} AS distance
    FROM graphruntime_store s
    JOIN graphruntime_store_vectors v ON v.prefix = s.prefix AND v.key = s.key
    WHERE (NOT %(omit_expired)s OR s.expires_at IS NULL
            OR s.expires_at > coalesce(%(now)s::timestamptz, now()))
        AND {where}
    ORDER BY s.prefix, s.key, distance
),
hits AS (
    SELECT n.prefix, n.key, n.value, n.created_at, n.updated_at, {score} AS score
    FROM nearest n
    ORDER BY n.distance, string_to_array(n.prefix, '.'), n.key
    LIMIT %(limit)s OFFSET %(offset)s
),
{refresh}
SELECT h.prefix, h.key, h.value, h.created_at, h.updated_at, h.score
FROM hits h
ORDER BY h.score DESC, string_to_array(h.prefix, '.'), h.key;

-- name: store_vector_distance
-- The cast is the store's type, e.g. vector(1536) or halfvec(1536); the operator pgvector's.
(v.embedding::{cast} {op} %(query_vector)s::{cast})

-- name: store_vector_ann_index
-- The store's ANN index, on the same expression its queries compare.
CREATE INDEX IF NOT EXISTS {name} ON graphruntime_store_vectors
    USING {method} ((embedding::{cast}) {ops}){params};

-- name: store_nothing
-- The answer to a listing whose conditions no namespace can meet.
SELECT NULL::text[] AS namespace WHERE false;

-- name: store_refresh_hits
-- The CTEs of a search that refresh the TTLs of the items found (hits), when
-- refresh is set: the rows are locked in key order first, skipping those a concurrent
-- batch holds, as store_get locks them.
locked AS (
    SELECT s.prefix, s.key FROM graphruntime_store s
    JOIN hits h ON s.prefix = h.prefix AND s.key = h.key
    WHERE %(refresh)s AND s.ttl_minutes IS NOT NULL
    ORDER BY s.prefix, s.key
    FOR UPDATE OF s SKIP LOCKED
),
refreshed AS (
    UPDATE graphruntime_store s
    SET expires_at = coalesce(%(now)s::timestamptz, now()) + s.ttl_minutes * interval '1 minute'
    FROM locked l
    WHERE s.prefix = l.prefix AND s.key = l.key
)
