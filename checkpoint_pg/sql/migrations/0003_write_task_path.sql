-- The task path of a pending write, for DeltaChannel history.
--
-- A DeltaChannel's value is rebuilt by replaying the writes saved along the
-- parent chain, and a step's writes must replay in the order the step applied
-- them: by task path (then task id, then index), not in the order the tasks
-- finished (insertion order, seq). NULL for writes saved without a path (input,
-- update_state, Command updates), which sort first. Adding a nullable column
-- without a default rewrites nothing: existing rows read as NULL.

ALTER TABLE graphruntime_writes ADD COLUMN task_path text COLLATE "C";
