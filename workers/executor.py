"""The task job: run some tasks of one step and record their outcomes as pending writes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from graphruntime.errors import GraphInterrupt
from graphruntime.pregel import RetryLater, run_task_attempt
from workers._deferred_writes import DeferredWrites
from workers.context import WorkerContext, error_info, open_loop
from workers.coordinator import coordinate, retry_task_job
from workers.errors import is_transient
from workers.messages import TaskMessage, TaskRef
from workers.store import EventRow, Run

log = logging.getLogger(__name__)


@contextmanager
def _lease(ctx: WorkerContext, msg: TaskMessage, task_ids: Sequence[str]) -> Iterator[None]:
    """Renew the tasks' lease while they run, so the sweeper knows this worker is alive."""
    stop = threading.Event()
    period = ctx.settings.task_lease / 3

    def renew() -> None:
        while not stop.wait(period):
            try:
                ctx.store.renew_leases(
                    msg.run_id, msg.checkpoint_id, task_ids, ctx.settings.task_lease
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


def execute_tasks(ctx: WorkerContext, msg: TaskMessage, *, redelivered: bool = False) -> None:
    """Execute the message's tasks exactly as the in-process loop would; safe to deliver twice.

    Writes are upserted, so a second delivery changes no state; a task's stream
    events are kept only by the delivery that marks it done, so none is doubled.
    ``redelivered``: an earlier delivery of this job may have completed the step's
    barrier and died before continuing the run, so this one makes sure it continues.
    """
    run = ctx.store.get_run(msg.run_id)
    if run.done:
        return
    open_ids = ctx.store.claim_tasks(
        msg.run_id,
        msg.checkpoint_id,
        [(t.id, t.attempts) for t in msg.tasks],
        ctx.worker_name,
        ctx.settings.task_lease,
    )
    if not open_ids:
        # every task is done (or waits for a later retry); coordinating twice is harmless
        if redelivered:
            ctx.dispatcher.coordinate(msg.run_id)
        return
    try:
        with _lease(ctx, msg, open_ids):
            events, retries = _run(ctx, run, msg, set(open_ids))
    except Exception as exc:  # not a node's error (that is a write): the run's own failure
        if is_transient(exc):
            raise  # Postgres went away: the job is retried, the run is not failed
        log.exception("task job %s failed outside its nodes", msg.job_id)
        ctx.store.finish(msg.run_id, "error", error=error_info(exc, None, msg.checkpoint_id))
        return
    for ref, delay in retries:
        retry_task_job(ctx, msg.run_id, msg.thread_id, msg.checkpoint_id, ref, delay)
    retrying = {ref.id for ref, _ in retries}
    finished = [t for t in open_ids if t not in retrying]
    if not finished:
        return
    completed, remaining = ctx.store.complete_tasks(
        msg.run_id, msg.checkpoint_id, finished, ctx.worker_name, events
    )
    if completed and remaining == 0:
        # the last finisher continues the run here: no broker round trip for the barrier
        try:
            coordinate(ctx, msg.run_id)
        except Exception as exc:
            if not is_transient(exc):
                raise
            # this job's work is saved; a retry of it would find nothing to do
            log.warning(
                "run %s: continuing after the barrier failed (%s); re-sent", msg.run_id, exc
            )
            ctx.dispatcher.coordinate(msg.run_id, delay=1.0)
    elif not completed and redelivered:
        ctx.dispatcher.coordinate(msg.run_id)


def _run(
    ctx: WorkerContext, run: Run, msg: TaskMessage, open_ids: set[str]
) -> tuple[dict[str, list[EventRow]], list[tuple[TaskRef, float]]]:
    """Execute the open tasks that have no output yet.

    Returns each task's stream events, and the tasks to try again (next attempt, delay).
    """
    graph = ctx.registry.get(run.graph)
    saver = DeferredWrites(ctx.task_job_saver)
    loop = open_loop(
        ctx,
        graph,
        run,
        None,
        checkpoint_id=msg.checkpoint_id,
        writes_of=open_ids,
        saver=saver,
        reopen=True,
    )
    # invoke() reads only the run's last values and its errors; a stream reads everything
    keep = None if run.payload.get("stream_modes") else {"values", "error"}
    events: dict[str, list[EventRow]] = {}
    retries: list[tuple[TaskRef, float]] = []
    if loop.checkpoint["id"] != msg.checkpoint_id:
        log.warning(
            "checkpoint %s of run %s is gone; counting job %s done",
            msg.checkpoint_id,
            msg.run_id,
            msg.job_id,
        )
        return events, retries
    for ref in msg.tasks:
        if ref.id not in open_ids:
            continue
        task = loop.prepare_one(ref.path)
        if task is None or task.id != ref.id:
            log.warning(
                "task %s of run %s matches no task of checkpoint %s; counting it done",
                ref.id,
                msg.run_id,
                msg.checkpoint_id,
            )
            continue
        if task.writes:
            continue  # an earlier delivery saved its output but died before counting it
        exc = run_task_attempt(
            task,
            loop.task_config(task, loop.custom_writer(task)),
            graph.retry_policy,
            attempts_done=ref.attempts,
        )
        if isinstance(exc, RetryLater):  # its RetryPolicy retries it as a new job
            list(loop.sink.drain())  # the failed attempt's chunks are not kept
            retries.append((ref.model_copy(update={"attempts": exc.attempts}), exc.delay))
            continue
        loop.commit(task, exc)
        task_events: list[EventRow] = list(loop.sink.drain())
        if exc is not None and not isinstance(exc, GraphInterrupt):
            task_events.append(((), "error", error_info(exc, task.name, msg.checkpoint_id)))
        events[ref.id] = [e for e in task_events if keep is None or e[1] in keep]
    saver.flush()  # every task's writes, one round trip, before any task counts as done
    return events, retries
