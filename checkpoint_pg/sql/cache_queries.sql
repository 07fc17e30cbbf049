-- name: cache_get
-- The live entries of these (namespace, key) pairs.
SELECT c.namespace, c.key, c.kind, c.value
FROM graphruntime_cache c
JOIN unnest(%(namespaces)s::text[], %(keys)s::text[]) AS k (namespace, key)
    ON c.namespace = k.namespace AND c.key = k.key
WHERE c.expires_at IS NULL OR c.expires_at > now();

-- name: cache_set
-- Upsert entries (one row per (namespace, key): the caller dedups); ttl in seconds.
INSERT INTO graphruntime_cache AS c (namespace, key, kind, value, expires_at)
SELECT e.namespace, e.key, e.kind, e.value,
    CASE WHEN e.ttl IS NULL THEN NULL ELSE now() + e.ttl * interval '1 second' END
FROM unnest(%(namespaces)s::text[], %(keys)s::text[], %(kinds)s::text[], %(values)s::bytea[],
            %(ttls)s::float8[]) AS e (namespace, key, kind, value, ttl)
ON CONFLICT (namespace, key) DO UPDATE SET
    kind = excluded.kind,
    value = excluded.value,
    expires_at = excluded.expires_at;

-- name: cache_clear_namespaces
DELETE FROM graphruntime_cache WHERE namespace = ANY(%(namespaces)s::text[]);

-- name: cache_clear_all
DELETE FROM graphruntime_cache;

-- name: cache_sweep
DELETE FROM graphruntime_cache WHERE expires_at <= now();
