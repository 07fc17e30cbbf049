"""Prometheus metrics of a prefork worker: recorded in every process, served by the main one.

Celery's pool processes are forked from the worker's main process, so counters and
histograms use prometheus-client's multiprocess mode: each process writes its values
to files in ``PROMETHEUS_MULTIPROC_DIR`` and the main process adds them up when
scraped. The mode is chosen when ``prometheus_client`` is imported, so the main process
sets the directory before importing it (nothing here imports it at module level), and
the pool processes inherit both.

Until :func:`enable_metrics` runs (a worker with ``GRAPHRUNTIME_METRICS_PORT`` set),
every ``record_*`` function returns at once.
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from workers.errors import ConfigurationError

if TYPE_CHECKING:
    from prometheus_client import Counter, Histogram
    from prometheus_client.registry import Collector, CollectorRegistry

DURATION_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    600.0, 1800.0, 3600.0,
)  # fmt: skip
"""Seconds: nodes range from microseconds of state shuffling to hour-long model calls."""

METRICS: dict[str, str] = {
    "graphruntime_runs_ended_total": "Runs a worker ended, by graph and status.",
    "graphruntime_steps_total": "Supersteps whose tasks' outcomes are in, by graph and kind "
    "(inline: the step's only task ran in the coordinator; distributed: as task jobs).",
    "graphruntime_step_duration_seconds": "From a step's start (its checkpoint, or the run's "
    "creation if later) until its tasks' outcomes are in.",
    "graphruntime_task_duration_seconds": "One attempt of a node, by graph and node.",
    "graphruntime_node_failures_total": "Node attempts that failed the run, by graph, node "
    "and error type.",
    "graphruntime_task_retries_total": "Node attempts that failed and were scheduled to run "
    "again by the node's RetryPolicy.",
    "graphruntime_sweeper_resends_total": "What the sweepers re-sent, by kind (task: an "
    "orphaned task; run: a stalled run; deadline: an interrupt resumed past its deadline).",
    "graphruntime_dead_letters_pushed_total": "Resume messages refused onto the dead letters.",
    "graphruntime_dead_letters_dropped_total": "Dead letters dropped by the list's cap.",
}


@dataclass(frozen=True)
class _Recorder:
    runs_ended: Counter
    steps: Counter
    step_duration: Histogram
    task_duration: Histogram
    node_failures: Counter
    retries: Counter
    resends: Counter
    dead_letters_pushed: Counter
    dead_letters_dropped: Counter


_recorder: _Recorder | None = None
# Every update goes through this lock, which is held across fork(): prometheus-client's
# own lock (one per process in multiprocess mode) is then never copied into a pool
# process while the sweeper or the resume listener thread holds it.
_lock = threading.Lock()
_fork_hooked = False


def _make_recorder(registry: CollectorRegistry | None) -> _Recorder:
    from prometheus_client import Counter, Histogram

    def counter(name: str, labels: Iterable[str]) -> Counter:
        return Counter(name.removesuffix("_total"), METRICS[name], list(labels), registry=registry)

    def histogram(name: str, labels: Iterable[str]) -> Histogram:
        return Histogram(
            name, METRICS[name], list(labels), buckets=DURATION_BUCKETS, registry=registry
        )

    return _Recorder(
        runs_ended=counter("graphruntime_runs_ended_total", ("graph", "status")),
        steps=counter("graphruntime_steps_total", ("graph", "kind")),
        step_duration=histogram("graphruntime_step_duration_seconds", ("graph",)),
        task_duration=histogram("graphruntime_task_duration_seconds", ("graph", "node")),
        node_failures=counter("graphruntime_node_failures_total", ("graph", "node", "error")),
        retries=counter("graphruntime_task_retries_total", ("graph", "node")),
        resends=counter("graphruntime_sweeper_resends_total", ("kind",)),
        dead_letters_pushed=counter("graphruntime_dead_letters_pushed_total", ()),
        dead_letters_dropped=counter("graphruntime_dead_letters_dropped_total", ()),
    )


def metrics_enabled() -> bool:
    return _recorder is not None


def start_recording(registry: CollectorRegistry | None = None) -> None:
    """Record from now on, in this process and those forked from it.

    The metrics are registered with ``registry`` if given (a test reads them there); a
    worker serves them from the multiprocess files instead (:func:`enable_metrics`).
    """
    global _recorder, _fork_hooked
    _recorder = _make_recorder(registry)
    if not _fork_hooked:
        os.register_at_fork(
            before=_lock.acquire, after_in_parent=_lock.release, after_in_child=_lock.release
        )
        _fork_hooked = True


RUN_STATUSES = ("success", "interrupted", "error")
STEP_KINDS = ("inline", "distributed")
RESEND_KINDS = ("task", "run", "deadline")


def record_known(graphs: Mapping[str, Iterable[str]]) -> None:
    """Create, at 0, every series whose labels are known before anything happens: runs
    ended per graph and status, steps per graph and kind, step durations per graph, task
    durations and retries per node, resends per kind (the dead-letter counters have no
    labels: they exist from the start anyway). Then ``rate()`` and ``increase()`` see a
    counter's first increment. Node failures, labelled by error type, start at a type's
    first failure. ``graphs``: each graph's node names."""
    if (r := _recorder) is None:
        return
    with _lock:
        for kind in RESEND_KINDS:
            r.resends.labels(kind)
        for graph, nodes in graphs.items():
            for status in RUN_STATUSES:
                r.runs_ended.labels(graph, status)
            for kind in STEP_KINDS:
                r.steps.labels(graph, kind)
            r.step_duration.labels(graph)
            for node in nodes:
                r.task_duration.labels(graph, node)
                r.retries.labels(graph, node)


def record_run_ended(graph: str, status: str) -> None:
    if (r := _recorder) is not None:
        with _lock:
            r.runs_ended.labels(graph, status).inc()


def record_step(graph: str, kind: str, seconds: float) -> None:
    if (r := _recorder) is not None:
        with _lock:
            r.steps.labels(graph, kind).inc()
            r.step_duration.labels(graph).observe(seconds)


def record_task(graph: str, node: str, seconds: float, *, error: str | None, retry: bool) -> None:
    """One attempt of a node: ``error`` names a failure's type, ``retry`` one retried later."""
    if (r := _recorder) is not None:
        with _lock:
            r.task_duration.labels(graph, node).observe(seconds)
            if retry:
                r.retries.labels(graph, node).inc()
            elif error is not None:
                r.node_failures.labels(graph, node, error).inc()


def record_resends(tasks: int, runs: int, deadlines: int) -> None:
    if (r := _recorder) is not None:
        with _lock:
            for kind, count in (("task", tasks), ("run", runs), ("deadline", deadlines)):
                if count:
                    r.resends.labels(kind).inc(count)


def record_dead_letters(pushed: int, dropped: int) -> None:
    if (r := _recorder) is not None:
        with _lock:
            if pushed:
                r.dead_letters_pushed.inc(pushed)
            if dropped:
                r.dead_letters_dropped.inc(dropped)


class MetricsServer:
    """The main process's ``/metrics``: every process's counters plus ``collectors``.

    ``directory`` is where the processes write (removed on :meth:`close` when it is a
    private one this server made).
    """

    def __init__(self, port: int, address: str, directory: str, private: bool) -> None:
        from prometheus_client import CollectorRegistry, start_http_server
        from prometheus_client.multiprocess import MultiProcessCollector

        self.directory = directory
        self.private = private
        self.registry = CollectorRegistry(auto_describe=False)
        MultiProcessCollector(self.registry, path=directory)  # type: ignore[no-untyped-call]
        try:
            self._server, self._thread = start_http_server(
                port, addr=address, registry=self.registry
            )
        except OSError as exc:
            raise ConfigurationError(_listen_problem(port, address, exc)) from exc
        self.port = int(self._server.server_port)

    def add(self, collector: Collector) -> None:
        self.registry.register(collector)

    def forget(self) -> None:
        """In a process forked from the server's: close its copy of the listening socket
        (only the main process serves; a pool process left behind must not hold the port)."""
        self._server.socket.close()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self.private:
            shutil.rmtree(self.directory, ignore_errors=True)
            if os.environ.get(MULTIPROC_DIR) == self.directory:
                del os.environ[MULTIPROC_DIR]
                from prometheus_client import values

                values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def _listen_problem(port: int, address: str, exc: OSError) -> str:
    """What to change when the metrics server cannot listen on ``address:port``."""
    where = f"cannot serve metrics on {address}:{port} ({exc})"
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"GRAPHRUNTIME_METRICS_ADDRESS: {where}; give an address of this host "
            "(0.0.0.0 for all of them, 127.0.0.1 for this host only)."
        )
    if exc.errno == errno.EACCES:
        return (
            f"GRAPHRUNTIME_METRICS_PORT: {where}; ports below 1024 need privileges this "
            "worker does not have: give a higher one."
        )
    return (
        f"GRAPHRUNTIME_METRICS_PORT: {where}; is another worker on this host using that "
        "port? Give each worker its own."
    )


MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
_PRIVATE_PREFIX = "graphruntime-metrics-"


def _private_directory() -> str:
    """A fresh directory for this worker, named after its pid, after removing those that
    earlier workers on this host left behind (killed before they could remove theirs)."""
    _remove_abandoned(tempfile.gettempdir())
    return tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-")


def _remove_abandoned(parent: str) -> None:
    """Remove this user's private directories whose worker is gone: its pid is not running,
    or is this process's (a restarted container reuses pids; this worker has made none yet)."""
    me = os.getpid()
    for path in glob.glob(os.path.join(parent, f"{_PRIVATE_PREFIX}*-*")):
        pid_text = os.path.basename(path).removeprefix(_PRIVATE_PREFIX).split("-", 1)[0]
        try:
            pid = int(pid_text)
            if os.stat(path).st_uid != os.getuid():
                continue
        except (ValueError, OSError):
            continue
        if pid == me or not _running(pid):
            shutil.rmtree(path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def enable_metrics(port: int, address: str = "0.0.0.0") -> MetricsServer:
    """Choose the multiprocess directory, start recording in this process (and the ones
    forked from it), and serve ``/metrics`` on ``port``.

    ``PROMETHEUS_MULTIPROC_DIR``, if set, is used (its ``*.db`` files are deleted first:
    it must be this worker's own); otherwise a fresh private temporary directory, removed
    on :meth:`MetricsServer.close` (or at the next worker's start on this host, if this one
    was killed). Raises :class:`ConfigurationError` when the directory cannot be prepared
    or the port listened on.
    """
    configured = os.environ.get(MULTIPROC_DIR)
    try:
        if configured:
            if not os.path.isdir(configured):
                raise ConfigurationError(
                    f"{MULTIPROC_DIR}={configured} is not a directory: create it (one per "
                    "worker), or unset it to let the worker make a private one."
                )
            for stale in glob.glob(os.path.join(configured, "*.db")):
                os.remove(stale)
            directory = configured
        else:
            directory = _private_directory()
    except OSError as exc:
        where = f"{MULTIPROC_DIR}={configured}" if configured else "a temporary directory"
        raise ConfigurationError(
            f"metrics: cannot prepare {where} for the pool processes' values ({exc}); "
            f"set {MULTIPROC_DIR} to a writable directory of this worker's own."
        ) from exc
    if not configured:
        os.environ[MULTIPROC_DIR] = directory
    if "prometheus_client" in sys.modules:
        # imported before the directory was set (by the application): choose the mode again
        from prometheus_client import values

        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]
    try:
        server = MetricsServer(port, address, directory, private=not configured)
    except BaseException:
        if not configured:
            shutil.rmtree(directory, ignore_errors=True)
            del os.environ[MULTIPROC_DIR]
        raise
    start_recording()
    return server


def process_stopped(pid: int | None = None) -> None:
    """A pool process ends: drop its live gauges' files (its counters keep counting)."""
    if _recorder is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(os.getpid() if pid is None else pid)  # type: ignore[no-untyped-call]


def disable_metrics() -> None:
    """Stop recording in this process (tests, and a worker's shutdown)."""
    global _recorder
    _recorder = None
