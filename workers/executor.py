"""The task job: run one task of one step and record its outcome as pending writes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from graphruntime.errors import GraphInterrupt
from graphruntime.pregel import run_task
from workers.context import WorkerContext, error_info, open_loop
from workers.coordinator import coordinate
from workers.messages import TaskMessage
from workers.store import Run

log = logging.getLogger(__name__)


@contextmanager
def _lease(ctx: WorkerContext, msg: TaskMessage) -> Iterator[None]:
    """Renew the task's lease while it runs, so the sweeper knows this worker is alive."""
    stop = threading.Event()
    period = ctx.settings.task_lease / 3

    def renew() -> None:
        while not stop.wait(period):
            try:
                ctx.store.renew_lease(
                    msg.run_id, msg.checkpoint_id, msg.task_id, ctx.settings.task_lease
                )
            except Exception:  # a missed renewal is retried next period
                log.exception("lease renewal failed")

    renewer = threading.Thread(target=renew, name="graphruntime-lease", daemon=True)
    renewer.start()
    try:
        yield
    finally:
        stop.set()
        renewer.join(timeout=5)


def execute_task(ctx: WorkerContext, msg: TaskMessage) -> None:
    """Execute a task exactly as the in-process loop would; safe to deliver twice.

    Writes are upserted, so a second delivery changes no state; its stream events
    are kept only by the delivery that marks the task done, so none is doubled.
    """
    run = ctx.store.get_run(msg.run_id)
    if run.done or ctx.store.task_done(msg.run_id, msg.checkpoint_id, msg.task_id):
        return
    try:
        events = _run(ctx, run, msg)
    except Exception as exc:  # not the node's error (that is a write): the run's own failure
        log.exception("task %s of run %s failed outside its node", msg.task_id, msg.run_id)
        ctx.store.finish(msg.run_id, "error", error=error_info(exc, None, msg.checkpoint_id))
        return
    completed, remaining = ctx.store.complete_task(
        msg.run_id, msg.checkpoint_id, msg.task_id, ctx.worker_name, events
    )
    if completed and remaining == 0:
        # the last finisher continues the run here: no broker round trip for the barrier
        coordinate(ctx, msg.run_id)


def _run(ctx: WorkerContext, run: Run, msg: TaskMessage) -> list[tuple[tuple[str, ...], str, Any]]:
    """Execute the task unless it already has its output; returns its stream events."""
    graph = ctx.registry.get(run.graph)
    loop = open_loop(ctx, graph, run, None, checkpoint_id=msg.checkpoint_id)
    task = loop.prepare_one(msg.task_path) if loop.checkpoint["id"] == msg.checkpoint_id else None
    events: list[tuple[tuple[str, ...], str, Any]] = []
    if task is None or task.id != msg.task_id:
        log.warning(
            "task %s of run %s matches no task of checkpoint %s; counting it done",
            msg.task_id,
            msg.run_id,
            msg.checkpoint_id,
        )
    elif not task.writes:
        ctx.store.claim_task(
            msg.run_id, msg.checkpoint_id, msg.task_id, ctx.worker_name, ctx.settings.task_lease
        )
        with _lease(ctx, msg):
            exc = run_task(
                task, loop.task_config(task, loop.custom_writer(task)), graph.retry_policy
            )
            loop.commit(task, exc)
        events.extend(loop.sink.drain())
        if exc is not None and not isinstance(exc, GraphInterrupt):
            events.append(((), "error", error_info(exc, task.name, msg.checkpoint_id)))
    return events
