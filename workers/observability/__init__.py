"""Metrics, logs and traces of the workers.

- **Metrics**: with ``GRAPHRUNTIME_METRICS_PORT``, each worker serves Prometheus metrics on
  ``/metrics``: counters and histograms recorded in every pool process (prometheus-client's
  multiprocess mode), and gauges of the cluster read at scrape time (``METRICS``, ``GAUGES``).
- **Logs**: ``GRAPHRUNTIME_LOG_FORMAT=json`` makes every worker log line a JSON object that
  carries the run, thread, graph, node, task and job ids of what logged it.
- **Traces**: ``GRAPHRUNTIME_TRACING=otel`` opens OpenTelemetry spans per job, run, step and
  task (the ``otel`` extra).

The coordinator, the task jobs, the sweeper and the dead letters call the hooks
(:func:`job`, :func:`run`, :func:`steps`, :func:`attempt`, :func:`run_ended`, :func:`swept`,
:func:`dead_letters`); the worker's Celery signals call :func:`start_worker`,
:func:`graphs_served`, :func:`watch_cluster`, :func:`process_started`,
:func:`process_stopped` and :func:`stop_worker`.
"""

from __future__ import annotations

from workers.observability._cluster import GAUGES, ClusterCollector
from workers.observability._hooks import (
    attempt,
    dead_letters,
    job,
    log_fields,
    run,
    run_end_committed,
    run_ended,
    run_ending,
    step_start,
    steps,
    swept,
)
from workers.observability._logs import bound, json_formatter, use_json_logs, use_text_logs
from workers.observability._metrics import (
    METRICS,
    MetricsServer,
    disable_metrics,
    enable_metrics,
    process_stopped,
    start_recording,
)
from workers.observability._process import BuildInfoCollector, WorkerProcessesCollector
from workers.observability._tracing import enable_tracing
from workers.observability._worker import (
    graphs_served,
    process_started,
    start_worker,
    stop_worker,
    watch_cluster,
)

__all__ = (
    "GAUGES",
    "METRICS",
    "BuildInfoCollector",
    "ClusterCollector",
    "MetricsServer",
    "WorkerProcessesCollector",
    "attempt",
    "bound",
    "dead_letters",
    "disable_metrics",
    "enable_metrics",
    "enable_tracing",
    "graphs_served",
    "job",
    "json_formatter",
    "log_fields",
    "process_started",
    "process_stopped",
    "run",
    "run_end_committed",
    "run_ended",
    "run_ending",
    "start_recording",
    "start_worker",
    "step_start",
    "steps",
    "stop_worker",
    "swept",
    "use_json_logs",
    "use_text_logs",
    "watch_cluster",
)
