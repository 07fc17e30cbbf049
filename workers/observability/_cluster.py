"""Gauges of the whole cluster, read from Redis and Postgres each time ``/metrics`` is scraped.

Every worker exports the same values (they describe the cluster, not the worker):
aggregate them with ``max``. A read that fails or takes longer than ``timeout`` seconds
leaves its gauges out of that scrape, and ``graphruntime_cluster_up{source}`` says so;
the scrape itself never fails or hangs on it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from workers.dispatch import QueueDepths
    from workers.store import Overview

log = logging.getLogger(__name__)
T = TypeVar("T")

GAUGES: dict[str, str] = {
    "graphruntime_queue_depth": "Messages waiting in a queue, by queue.",
    "graphruntime_runs_in_flight": "Runs queued or running, by status.",
    "graphruntime_pending_interrupts": "Interrupts waiting for a resume.",
    "graphruntime_overdue_interrupts": "Pending interrupts past their deadline (the sweepers "
    "resume them with their default).",
    "graphruntime_live_workers": "Workers (Celery worker nodes: a main process and its pool) "
    "with a fresh heartbeat.",
    "graphruntime_live_worker_processes": "Their processes with a fresh heartbeat.",
    "graphruntime_cluster_up": "Whether this scrape could read the cluster's state from a "
    "source (redis: queue depths; postgres: runs, interrupts, workers).",
}


class ClusterCollector:
    """A prometheus-client collector over two reads: queue depths and the store's overview."""

    def __init__(
        self,
        depths: Callable[[], QueueDepths],
        overview: Callable[[], Overview],
        queues: tuple[str, str],
        *,
        timeout: float = 2.0,
    ) -> None:
        self.depths = depths
        self.overview = overview
        self.queues = queues
        """The coordinator queue's and the task queue's names."""
        self.timeout = timeout
        self._reads: dict[str, Future[Any]] = {}
        self._up: dict[str, bool] = {}
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        with self._lock:  # one scrape at a time: a slow source is not read twice at once
            redis = self._start("redis", self.depths)
            postgres = self._start("postgres", self.overview)
            depths: QueueDepths | None = self._wait("redis", redis)
            overview: Overview | None = self._wait("postgres", postgres)

        def gauge(name: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, GAUGES[name], labels=list(labels))

        up = gauge("graphruntime_cluster_up", ("source",))
        up.add_metric(["redis"], float(depths is not None))
        up.add_metric(["postgres"], float(overview is not None))
        yield up
        if depths is not None:
            queue = gauge("graphruntime_queue_depth", ("queue",))
            queue.add_metric([self.queues[0]], depths.coordinator)
            queue.add_metric([self.queues[1]], depths.tasks)
            yield queue
        if overview is not None:
            runs = gauge("graphruntime_runs_in_flight", ("status",))
            runs.add_metric(["queued"], overview.queued)
            runs.add_metric(["running"], overview.running)
            yield runs
            for name, value in (
                ("graphruntime_pending_interrupts", overview.pending_interrupts),
                ("graphruntime_overdue_interrupts", overview.overdue),
                ("graphruntime_live_workers", overview.workers),
                ("graphruntime_live_worker_processes", overview.processes),
            ):
                single = gauge(name)
                single.add_metric([], value)
                yield single

    def _start(self, source: str, read: Callable[[], T]) -> Future[T] | None:
        """Read in a daemon thread (a hung connection must not keep the worker from exiting);
        None while an earlier read of this source is still stuck."""
        earlier = self._reads.get(source)
        if earlier is not None and not earlier.done():
            return None
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(read())
            except BaseException as exc:  # noqa: BLE001 - handed to the scrape, which logs it
                future.set_exception(exc)

        self._reads[source] = future
        threading.Thread(target=run, name=f"graphruntime-metrics-{source}", daemon=True).start()
        return future

    def _wait(self, source: str, future: Future[T] | None) -> T | None:
        problem: str | None = None
        value: T | None = None
        if future is None:
            problem = "an earlier read has not returned yet"
        else:
            try:
                value = future.result(self.timeout)
            except FutureTimeout:
                problem = f"no answer within {self.timeout}s"
            except Exception as exc:  # noqa: BLE001 - leaves the gauges out, never fails the scrape
                problem = f"{type(exc).__name__}: {exc}"
        was_up = self._up.get(source, True)
        self._up[source] = problem is None
        if problem is not None and was_up:
            log.warning("metrics: cannot read the cluster's state from %s: %s", source, problem)
        elif problem is None and not was_up:
            log.info("metrics: reading the cluster's state from %s again", source)
        return value
