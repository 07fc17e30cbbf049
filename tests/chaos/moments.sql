-- The crash mode's moments (tests/chaos/test_crash.py): test-only triggers, installed in
-- the private cluster's database after its migrations, that tell the test when a moment
-- that matters has just committed. Only the moment the test armed (chaos_armed) is told:
-- a NOTIFY on channel chaos_moment, payload '<moment> <thread or run>', delivered once the
-- transaction committed (for a durable commit: once its WAL was flushed). The product's
-- statements are unchanged; unarmed, each trigger reads one row.

CREATE TABLE chaos_armed (moment text);
INSERT INTO chaos_armed VALUES (NULL);

-- an async commit the test makes just before it kills the server: its survival tells
-- whether that crash lost the async commits made just before it
CREATE TABLE chaos_canary (id text PRIMARY KEY);

CREATE FUNCTION chaos_moment() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    moment text := TG_ARGV[0];
    subject text;
BEGIN
    IF (SELECT armed.moment FROM chaos_armed armed) IS DISTINCT FROM moment THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'graphruntime_threads' THEN
        subject := NEW.thread_id;
    ELSE
        subject := NEW.run_id::text;
    END IF;
    IF moment = 'release' AND NOT EXISTS (
        SELECT 1 FROM graphruntime_runs r
        WHERE r.thread_id = NEW.thread_id AND r.status = 'running'
    ) THEN
        RETURN NULL;  -- the release with a run's end: that is the moment 'end'
    END IF;
    PERFORM pg_notify('chaos_moment', moment || ' ' || subject);
    RETURN NULL;
END $$;

-- a lease freed while its thread's run goes on (its step's tasks dispatched): durable
CREATE TRIGGER chaos_release AFTER UPDATE OF lease_holder ON graphruntime_threads
    FOR EACH ROW WHEN (OLD.lease_holder IS NOT NULL AND NEW.lease_holder IS NULL)
    EXECUTE FUNCTION chaos_moment('release');

-- a step's tasks registered in the barrier (their jobs are sent next): durable
CREATE TRIGGER chaos_dispatch AFTER INSERT ON graphruntime_step_tasks
    FOR EACH ROW EXECUTE FUNCTION chaos_moment('dispatch');

-- a run's end (with its lease's release and its inbox): durable
CREATE TRIGGER chaos_end AFTER UPDATE OF status ON graphruntime_runs
    FOR EACH ROW
    WHEN (OLD.status IN ('queued', 'running') AND NEW.status NOT IN ('queued', 'running'))
    EXECUTE FUNCTION chaos_moment('end');

-- a submit or a resume taken (the client, or the resume queue, is told next): durable
CREATE TRIGGER chaos_ack AFTER INSERT ON graphruntime_runs
    FOR EACH ROW WHEN (NEW.kind <> 'cancel')
    EXECUTE FUNCTION chaos_moment('ack');

-- a thread's lease taken: soft state (an async commit)
CREATE TRIGGER chaos_lease AFTER UPDATE OF lease_holder ON graphruntime_threads
    FOR EACH ROW WHEN (OLD.lease_holder IS NULL AND NEW.lease_holder IS NOT NULL)
    EXECUTE FUNCTION chaos_moment('lease');

-- a task claimed by a worker: soft state (an async commit)
CREATE TRIGGER chaos_claim AFTER UPDATE OF worker ON graphruntime_step_tasks
    FOR EACH ROW WHEN (OLD.worker IS NULL AND NEW.worker IS NOT NULL)
    EXECUTE FUNCTION chaos_moment('claim');
