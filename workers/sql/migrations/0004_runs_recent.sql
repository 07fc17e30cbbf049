-- Recent runs across threads, newest first (graphrun runs without --thread).
CREATE INDEX graphruntime_runs_recent ON graphruntime_runs (created_at DESC);
