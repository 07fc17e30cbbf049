-- The store's items (graphruntime.store API, checkpoint_pg.PostgresStore).
-- Applied by checkpoint_pg.schema.Migrations, recorded in graphruntime_store_migrations.
--
-- prefix is the namespace's labels joined by '.' (labels never contain '.').
-- Collation "C" orders prefix and key by code point, as Python orders str: the
-- primary key's btree then serves a namespace-prefix search as a range scan
-- (prefix >= 'a.b.' AND prefix < 'a.b/') and sorts like the in-memory store.
CREATE TABLE graphruntime_store (
    prefix text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    ttl_minutes double precision,
    expires_at timestamptz,
    PRIMARY KEY (prefix, key),
    CONSTRAINT graphruntime_store_value_is_object CHECK (jsonb_typeof(value) = 'object'),
    CONSTRAINT graphruntime_store_ttl_has_expiry CHECK ((ttl_minutes IS NULL) = (expires_at IS NULL))
);

-- The TTL sweep deletes by expiry; most items have none.
CREATE INDEX graphruntime_store_expires_at ON graphruntime_store (expires_at)
    WHERE expires_at IS NOT NULL;
