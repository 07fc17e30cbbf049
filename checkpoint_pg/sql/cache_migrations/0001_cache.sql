-- Node and task results cached by their input (graphruntime.cache API, checkpoint_pg.PostgresCache).
-- Applied by checkpoint_pg.schema.Migrations, recorded in graphruntime_cache_migrations.
--
-- namespace is the cache namespace's labels as a JSON array (exact match only); kind and
-- value are the serializer's typed payload.
CREATE TABLE graphruntime_cache (
    namespace text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    value bytea NOT NULL,
    expires_at timestamptz,
    PRIMARY KEY (namespace, key)
);

-- Expired entries are invisible at once; sweep_expired deletes them by expiry.
CREATE INDEX graphruntime_cache_expires_at ON graphruntime_cache (expires_at)
    WHERE expires_at IS NOT NULL;
