"""A worker's observability from start to stop: what its Celery signals call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from workers.observability._cluster import ClusterCollector
from workers.observability._metrics import (
    MetricsServer,
    disable_metrics,
    enable_metrics,
    record_known,
)
from workers.observability._process import BuildInfoCollector, WorkerProcessesCollector
from workers.observability._tracing import enable_tracing

if TYPE_CHECKING:
    from workers.context import WorkerContext
    from workers.settings import Settings

_server: list[MetricsServer] = []


def start_worker(settings: Settings) -> MetricsServer | None:
    """In the worker's main process, before its pool starts: turn tracing on if asked, and
    serve metrics if ``GRAPHRUNTIME_METRICS_PORT`` is set: the pool's counters, each
    process's ``process_*`` metrics and ``graphruntime_build_info``.

    Raises :class:`~workers.errors.ConfigurationError` (the worker must not start) when
    tracing is asked for without OpenTelemetry, or the port cannot be listened on.
    """
    enable_tracing(settings.tracing)
    if settings.metrics_port is None:
        return None
    server = enable_metrics(settings.metrics_port, settings.metrics_address)
    server.add(WorkerProcessesCollector())
    server.add(BuildInfoCollector())
    _server.append(server)
    return server


def graphs_served(graphs: Mapping[str, Iterable[str]]) -> None:
    """In the worker's main process, once its graphs loaded (``graphs``: each one's node
    names): their counters and histograms exist at 0 from now on (see
    :func:`~workers.observability._metrics.record_known`)."""
    record_known(graphs)


def watch_cluster(ctx: WorkerContext, *, timeout: float = 2.0) -> None:
    """Export the cluster's gauges (queue depths, runs, interrupts, workers) read through
    ``ctx`` at each scrape; nothing when this worker serves no metrics."""
    if not _server:
        return
    settings = ctx.settings
    _server[-1].add(
        ClusterCollector(
            ctx.broker.queue_depths,
            lambda: ctx.store.overview(ctx.stale),
            (settings.coordinator_queue, settings.task_queue),
            timeout=timeout,
        )
    )


def process_started() -> None:
    """In a pool process, as it starts: let go of the main process's metrics socket."""
    while _server:
        _server.pop().forget()


def stop_worker() -> None:
    """In the main process, at shutdown: stop serving and recording."""
    disable_metrics()
    while _server:
        _server.pop().close()
