-- The server's epoch: a value crash recovery resets. An UNLOGGED table is emptied when
-- Postgres recovers from a crash (or a standby is promoted), never on a clean restart,
-- which first flushes every commit. A job reads the epoch when it claims its work; the
-- durable commit that vouches for its earlier asynchronous commits (a run's end, a
-- step's dispatch, a task's completion) refuses to commit if the epoch changed since:
-- a crash may have taken those commits back, and the job is redone instead.
CREATE UNLOGGED TABLE graphruntime_epoch (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    epoch uuid NOT NULL
);

CREATE FUNCTION graphruntime_epoch() RETURNS uuid LANGUAGE plpgsql AS $$
DECLARE
    current uuid;
BEGIN
    SELECT epoch INTO current FROM graphruntime_epoch;
    IF current IS NULL THEN
        INSERT INTO graphruntime_epoch (epoch) VALUES (gen_random_uuid())
        ON CONFLICT (one) DO NOTHING;
        SELECT epoch INTO current FROM graphruntime_epoch;
    END IF;
    RETURN current;
END
$$;

-- SQLSTATE GRCRA: the job is retried (workers.errors.StoreRecoveredError).
CREATE FUNCTION graphruntime_check_epoch(seen uuid) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF seen IS NOT NULL AND seen IS DISTINCT FROM graphruntime_epoch() THEN
        RAISE EXCEPTION 'Postgres recovered from a crash since this job began: its work '
            'that was not yet durable may be lost, so it is redone'
            USING ERRCODE = 'GRCRA';
    END IF;
    RETURN true;
END
$$;
