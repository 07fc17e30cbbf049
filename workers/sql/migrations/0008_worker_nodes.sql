-- Which Celery worker node each beating process belongs to, and the graphs it serves.
-- `graphrun status` and graphruntime_live_workers count nodes (a worker and its pool
-- processes are one), and a run of a graph that no live worker serves fails at once
-- instead of waiting GRAPHRUNTIME_UNSERVED_GRAPH_TIMEOUT for one. NULL: a process that
-- does not say (a client, a worker of an older release).
ALTER TABLE graphruntime_workers ADD COLUMN node text;
ALTER TABLE graphruntime_workers ADD COLUMN graphs text[];
