-- Checkpoints, channel values and pending writes.
--
-- Sizes matter (a thread writes a checkpoint per superstep), so compared with
-- LangGraph's tables: checkpoint and task ids are `uuid` (16 bytes, not 37), the
-- checkpoint body is zlib-compressed JSON in `bytea` with small values inline
-- (see checkpoint_pg/_codec.py), writes carry no task_path (they are ordered by
-- `seq`, their insertion order), and there is no separate thread_id index:
-- every primary key starts with thread_id.
-- Fixed-width columns come first so rows need no alignment padding. Key text
-- columns use the "C" collation: byte order, the same on every server and as
-- Python's str order, and cheaper to compare than a linguistic collation.

CREATE TABLE graphruntime_checkpoints (
    checkpoint_id uuid NOT NULL,
    parent_checkpoint_id uuid,
    thread_id text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    -- The checkpoint without its id and without the values kept in blobs.
    body bytea NOT NULL,
    -- {channel: blob version key} of the values stored in graphruntime_blobs.
    blob_versions jsonb,
    -- Metadata as JSONB so list(filter=...) can query it.
    metadata jsonb NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);

-- One row per (channel, version): a step stores only the channels it changed.
CREATE TABLE graphruntime_blobs (
    thread_id text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    channel text COLLATE "C" NOT NULL,
    version text COLLATE "C" NOT NULL,
    type text NOT NULL,
    value bytea NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
);

-- Pending writes of the tasks of the step that started from a checkpoint.
CREATE TABLE graphruntime_writes (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    checkpoint_id uuid NOT NULL,
    -- The task id; a task id that is not a UUID string is kept in task_name, and
    -- task_id is then its uuid5 (checkpoint_pg/_codec.py: task_key).
    task_id uuid NOT NULL,
    idx integer NOT NULL,
    thread_id text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    task_name text,
    channel text COLLATE "C" NOT NULL,
    type text NOT NULL,
    value bytea NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
