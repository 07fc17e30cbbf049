"""Thin Celery tasks and worker hooks: decode, call the plain function, nothing else."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any, NoReturn

from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from celery.utils.log import get_multiprocessing_logger

from workers import observability as observe
from workers._drain import RESIDENT_SECONDS, drain
from workers._drain_flag import DrainFlag
from workers._retrying import JOB_OUTAGE
from workers.app import CeleryBroker, get_app
from workers.context import WorkerContext
from workers.coordinator import coordinate_many
from workers.errors import (
    MalformedMessageError,
    NodeFailedError,
    RunNotFoundError,
    WorkerError,
    is_transient,
)
from workers.executor import execute_tasks
from workers.heartbeat import Heartbeat
from workers.messages import CoordinateMessage, TaskMessage, parse
from workers.runtime import connect

log = logging.getLogger(__name__)
app = get_app()
_background: list[Any] = []
_node: list[str] = []  # this worker's Celery node name, set before its pool starts
_pool_size: list[int] = []  # its pool's processes, set before its pool starts
_residency: list[DrainFlag] = []  # the main process's handle on its resident's flag


@cache
def _context() -> WorkerContext:
    settings = app.conf.graphruntime_settings
    return connect(settings, broker=CeleryBroker(app, settings))


@contextmanager
def _retry_when_transient(job: Any) -> Iterator[None]:
    """Re-queue the job when Postgres or Redis is unreachable; the job is idempotent."""
    try:
        yield
    except Exception as exc:
        if not is_transient(exc):
            raise
        if JOB_OUTAGE.exhausted(job.request.retries):
            # the store has been away for minutes: stop; the sweeper re-sends the work
            # from Postgres once it is back (an orphaned task, a stalled run)
            log.error(
                "job %s gave up after %d retries: %s", job.request.id, JOB_OUTAGE.retries, exc
            )
            raise
        delay = JOB_OUTAGE.delay(job.request.retries)
        log.warning(
            "job %s met an unreachable store; retrying in %.1fs: %s", job.request.id, delay, exc
        )
        raise job.retry(countdown=delay, max_retries=None) from exc


@app.task(name="graphruntime.coordinate", bind=True)  # type: ignore[untyped-decorator]
def coordinate_task(self: Any, **kwargs: Any) -> None:
    try:
        msg = parse(CoordinateMessage, kwargs)
    except MalformedMessageError:
        log.exception("dropping malformed coordinate message %r", kwargs)
        return
    runs = msg.runs
    with observe.job("coordinate", runs[0], self.request.id), _retry_when_transient(self):
        ctx = _context()
        with ctx.pin():  # one connection for the job's statements
            try:
                failures = coordinate_many(ctx, runs)
            except RunNotFoundError:
                log.warning("dropping coordinate message for unknown run %s", runs[0])
                failures = []
            # free now: take the runs queued meanwhile (single submits skip their messages);
            # a retried job drains in any case (a crash may have taken back what it drained)
            retried = bool(self.request.retries)
            failures += drain(
                ctx, coordinate_many, when_idle=retried, stay=_may_stay(), home=_node_name() or ""
            )
    _fail_visibly(failures)


@app.task(name="graphruntime.execute", bind=True)  # type: ignore[untyped-decorator]
def execute_task_job(self: Any, **kwargs: Any) -> None:
    try:
        msg = parse(TaskMessage, kwargs)
    except MalformedMessageError:
        log.exception("dropping malformed task message %r", kwargs)
        return
    request = self.request
    redelivered = bool(request.retries) or bool((request.delivery_info or {}).get("redelivered"))
    with observe.job("execute", msg.run_id, msg.job_id), _retry_when_transient(self):
        ctx = _context()
        with ctx.pin():
            try:
                failures = execute_tasks(ctx, msg, redelivered=redelivered)
            except RunNotFoundError:
                log.warning("dropping task message for unknown run %s", msg.run_id)
                return
    _fail_visibly(failures)


def _may_stay() -> bool:
    """Whether a coordinator job may stay as the queue's resident (workers/_drain.py):
    not in a pool of one process, whose only process task jobs need."""
    return bool(_pool_size) and _pool_size[-1] >= 2


def _fail_visibly(failures: list[str]) -> None:
    """End the job as FAILURE (Flower, events) when a node or run failed in it.

    Everything is recorded by then; the message is acked like any finished job
    (``task_acks_on_failure_or_timeout``), never redelivered for this.
    """
    if failures:
        raise NodeFailedError("; ".join(failures))


@worker_init.connect  # type: ignore[untyped-decorator]
def _start_worker(sender: Any = None, **_: Any) -> None:
    """Before the pool starts, in order: the URLs parse, tracing and the metrics port start,
    every registered graph imports, Postgres and Redis answer (within
    GRAPHRUNTIME_CONNECT_TIMEOUT), the database's schemas are current. The worker exits
    otherwise (2: a malformed setting; 3: anything else), naming the setting: it must not
    say "ready" and take work it cannot do. Celery would catch SystemExit here and carry on,
    hence ``os._exit``."""
    from workers.config import registry_for
    from workers.services import check_urls, reach

    settings = app.conf.graphruntime_settings
    try:
        db, broker = check_urls(settings)
    except WorkerError as exc:  # ConfigurationError: which setting, what is wrong
        _cannot_start(exc, 2)
    try:
        # what this host alone decides first, so it is said before any wait on the network
        observe.start_worker(settings)
        registry = registry_for(settings)
        for name in registry.names():
            registry.get(name)
        reach(settings, db, broker, schemas=True)
    except WorkerError as exc:  # says which setting or entry, and what to change
        _cannot_start(exc, 3)
    observe.graphs_served({name: list(registry.get(name).nodes) for name in registry.names()})
    if not registry.names():
        log.warning(
            "GRAPHRUNTIME_GRAPHS and GRAPHRUNTIME_CONFIG name no graph: this worker can run nothing"
        )
    # the pool processes, forked later, inherit it: every process of the node beats as one
    _node.append(str(getattr(sender, "hostname", "") or ""))
    _pool_size.append(int(getattr(sender, "concurrency", 0) or 0))


def _cannot_start(exc: WorkerError, code: int) -> NoReturn:
    log.critical("graphruntime worker cannot start: %s", exc)
    logging.shutdown()
    os._exit(code)


@after_setup_logger.connect  # type: ignore[untyped-decorator]
@after_setup_task_logger.connect  # type: ignore[untyped-decorator]
def _log_format(logger: logging.Logger, **_: Any) -> None:
    """GRAPHRUNTIME_LOG_FORMAT=json: Celery's handlers write JSON lines, its own too."""
    if app.conf.graphruntime_settings.log_format == "json":
        billiard = get_multiprocessing_logger()  # None until billiard sets it up
        observe.use_json_logs([logger] if billiard is None else [logger, billiard])


@worker_process_init.connect  # type: ignore[untyped-decorator]
def _start_process(**_: Any) -> None:
    """Each pool process connects, beats, and imports every registered graph first.

    A broken registry entry then fails at startup, not on the first run, and the
    first run does not pay for importing the graphs.
    """
    observe.process_started()
    ctx = _context()
    for name in ctx.registry.names():
        ctx.registry.get(name)
    heartbeat = Heartbeat(
        ctx.store,
        ctx.worker_name,
        ctx.settings.heartbeat_interval,
        lambda: ctx.job_token,
        node=_node_name(),
        graphs=ctx.registry.names(),
    )
    heartbeat.start()
    _background.append(heartbeat)


def _node_name() -> str | None:
    return _node[-1] if _node and _node[-1] else None


@worker_process_shutdown.connect  # type: ignore[untyped-decorator]
def _stop_process(**_: Any) -> None:
    for item in _background:
        item.stop()
    observe.process_stopped()


@worker_ready.connect  # type: ignore[untyped-decorator]
def _start_background(**_: Any) -> None:
    """In the worker's main process: the sweeper and the ops resume-queue listener."""
    from workers.client import GraphClient
    from workers.remote_graphs import GraphRequestListener
    from workers.resume import ResumeListener
    from workers.sweeper import Sweeper

    # not _context(): pool processes forked later must not inherit this process's pool
    settings = app.conf.graphruntime_settings
    broker = CeleryBroker(app, settings)
    broker.check_persistence()
    ctx = connect(settings, broker=broker)
    heartbeat = Heartbeat(
        ctx.store,
        ctx.worker_name,
        settings.heartbeat_interval,
        node=_node_name(),
        graphs=ctx.registry.names(),
    )
    heartbeat.start()  # the resume listener's processing list is kept while this beats
    sweeper = Sweeper(ctx)
    sweeper.start()
    client = GraphClient(
        settings=ctx.settings,
        registry=ctx.registry,
        saver=ctx.saver,
        store=ctx.store,
        broker=ctx.broker,
    )
    listener = ResumeListener(client, broker.redis, settings.resume_queue, ctx.worker_name)
    threading.Thread(target=listener.run, name="graphruntime-resume", daemon=True).start()
    # what needs the graphs' code, asked by clients that lack it (workers/remote_graphs.py)
    requests = GraphRequestListener(
        client,
        broker.redis,
        settings.coordinator_queue,
        ctx.registry.names(),
        settings.heartbeat_interval,
    )
    requests.start()
    _background.extend([listener, requests, sweeper, heartbeat])
    observe.watch_cluster(ctx)
    residency = DrainFlag(broker.redis, settings.coordinator_queue, _node_name() or "")
    residency.stay()  # a mark its last shutdown left would send its resident away at once
    _residency.append(residency)


@worker_shutting_down.connect  # type: ignore[untyped-decorator]
def _send_the_resident_away(**_: Any) -> None:
    """A warm shutdown waits for the running jobs: the worker's resident leaves now."""
    for residency in _residency:
        try:
            residency.leave(RESIDENT_SECONDS)
        except Exception as exc:  # noqa: BLE001 - it leaves after RESIDENT_SECONDS then
            log.warning("could not tell the resident to leave: %s", exc)


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _stop_background(**_: Any) -> None:
    for item in _background:
        item.stop()
    observe.stop_worker()
