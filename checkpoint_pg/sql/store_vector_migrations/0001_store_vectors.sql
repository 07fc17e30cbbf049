-- Embeddings of the store's items for vector search (PostgresStore with index=).
-- Applied by PostgresStore.setup() only when the store has an index: a store without
-- one never needs the pgvector extension. Recorded in graphruntime_store_vector_migrations.
--
-- One row per embedded text of an item (field_name: the path, or "path.i" when the path
-- yields several texts). The embedding is an untyped vector: a store's dims and
-- vector_type apply as casts in its queries and in its ANN index (an expression index).
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE graphruntime_store_vectors (
    prefix text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    field_name text COLLATE "C" NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (prefix, key, field_name),
    FOREIGN KEY (prefix, key) REFERENCES graphruntime_store (prefix, key) ON DELETE CASCADE
);
