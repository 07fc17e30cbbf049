"""The task job: run some tasks of one step and record their outcomes as pending writes.

It uses the same step API as the in-process runtime: it builds the run's loop on
the step's checkpoint (with only its own tasks' pending writes), re-opens the step
as the run started it, plans just its tasks, runs each one attempt, and records it.
The barrier is counted in Postgres; the job that completes it continues the run.
"""

from __future__ import annotations

import logging
import uuid

from graphruntime.config import RunnableConfig
from graphruntime.errors import GraphInterrupt
from graphruntime.pregel.driver import RetryLater, is_call_path, perform_saves
from workers import observability as observe
from workers._live_events import LiveEvents
from workers._saves import RunSaves
from workers._step_executor import recorded_errors
from workers.context import WorkerContext, at_run_start, run_loop
from workers.coordinator import LACKING_GRAPH_DELAY, coordinate
from workers.dispatch import dispatch_retry
from workers.errors import NondeterministicCallError, error_info, is_transient
from workers.messages import TaskMessage
from workers.store import EventRow, Run

log = logging.getLogger(__name__)


def execute_tasks(ctx: WorkerContext, msg: TaskMessage, *, redelivered: bool = False) -> list[str]:
    """Execute the message's tasks exactly as the in-process loop would; safe to deliver twice.

    Returns what failed here, one line per failed node (all of it recorded already),
    so the Celery job can end as failed where people look (Flower, the worker log).

    Only tasks this job claims run (a task claimed by a live worker, done, or named
    with a path that is not its own is left alone). Writes are upserted and a task's
    events are kept only by the delivery that completes it. ``redelivered``: an earlier
    delivery may have completed the barrier and died before continuing the run.
    """
    store = ctx.store
    run = store.get_run(msg.run_id)
    if run.done:
        return []
    if run.thread_id != msg.thread_id:
        log.warning(
            "task job %s names thread %s, not its run's: dropped", msg.job_id, msg.thread_id
        )
        return []
    failures: list[str] = []
    if run.graph not in ctx.registry.names():
        log.warning(
            "task job %s is of graph %r, which this worker does not serve; left for another worker",
            msg.job_id,
            run.graph,
        )
        ctx.broker.send_tasks([msg], delay=LACKING_GRAPH_DELAY)
        return []
    refs = [(t.id, t.path, t.attempts) for t in msg.tasks]
    ctx.job_token = uuid.uuid4().hex
    try:
        claimed, epoch = store.claim_tasks(
            run.run_id, msg.checkpoint_id, refs, ctx.worker_name, ctx.stale, ctx.job_token
        )
        if not claimed:
            # done, held by a live worker, or not this step's: continuing twice is harmless
            if redelivered:
                ctx.broker.send_coordinate(run.run_id)
            return []
        try:
            completed, remaining = _run_claimed(ctx, run, msg, claimed, failures, epoch)
        except Exception as exc:  # not a node's error (that is a write): the run's own failure
            if is_transient(exc):
                _give_up(ctx, run.run_id, msg.checkpoint_id, claimed)
                raise
            log.exception("task job %s failed outside its nodes", msg.job_id)
            store.finish_run(run.run_id, "error", error=error_info(exc, None, msg.checkpoint_id))
            observe.run_ended(run.graph, "error")
            return [f"run {run.run_id}: {type(exc).__name__}: {exc}"]
    finally:
        ctx.job_token = None
    if completed and remaining == 0:
        # the last finisher continues the run here: no broker round trip for the barrier
        try:
            failures.extend(coordinate(ctx, run.run_id))
        except Exception as exc:
            if not is_transient(exc):
                raise
            # this job's work is saved; a retry of it would find nothing to do
            log.warning(
                "run %s: continuing after the barrier failed (%s); re-sent", run.run_id, exc
            )
            ctx.broker.send_coordinate(run.run_id, delay=1.0)
    elif not completed and redelivered:
        ctx.broker.send_coordinate(run.run_id)
    return failures


def _give_up(ctx: WorkerContext, run_id: str, checkpoint_id: str, claimed: list[str]) -> None:
    """Free this job's claims before it is retried (maybe on another worker).

    If the store is unreachable now, this process's next heartbeat frees them.
    """
    try:
        ctx.store.release_claims(run_id, checkpoint_id, claimed, ctx.worker_name)
    except Exception as exc:
        if not is_transient(exc):
            raise


def _run_claimed(
    ctx: WorkerContext,
    run: Run,
    msg: TaskMessage,
    claimed: list[str],
    failures: list[str],
    epoch: str | None,
) -> tuple[int, int]:
    """Run the claimed tasks; returns the barrier's (completed here, still open).
    ``epoch``: the claim's (the tasks' writes commit asynchronously before it)."""
    graph = ctx.registry.get(run.graph)
    saves = RunSaves(ctx.saver)  # every task's writes, stored together at the end
    saver = saves.saver
    step_config: RunnableConfig = {
        "configurable": {
            "thread_id": run.thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": msg.checkpoint_id,
        }
    }
    if any(is_call_path(ref.path) for ref in msg.tasks if ref.id in claimed):
        # a call is re-created by running its caller again, which reads the results
        # of the calls it made before from the whole step's writes
        saved = saver.get_tuple(step_config)
    else:
        saved = saver.get_task_tuple(step_config, claimed)
    if saved is None:
        log.warning(
            "checkpoint %s of run %s is gone; job %s dropped",
            msg.checkpoint_id,
            run.run_id,
            msg.job_id,
        )
        return 0, -1
    loop = run_loop(
        graph,
        run,
        saver,
        checkpoint_id=msg.checkpoint_id,
        saved=saved,
        # an error handler gets the failed node's error as its job recorded it (typed)
        task_errors=lambda checkpoint_id: recorded_errors(
            ctx.store.step_tasks(run.run_id, checkpoint_id)
        ),
        saver_io=saves,
    )
    if at_run_start(loop, run):
        loop.open_step(run.payload.input)
    streaming = bool(run.payload.stream_modes)
    outcomes: dict[str, dict[str, object] | None] = {}
    events: dict[str, list[EventRow]] = {}
    for ref in msg.tasks:
        if ref.id not in claimed:
            continue
        task = loop.plan_task(ref.path)
        if task is None or task.id != ref.id:
            log.error(
                "task %s of run %s is not the task at %s of checkpoint %s; left alone",
                ref.id,
                run.run_id,
                list(ref.path),
                msg.checkpoint_id,
            )
            if is_call_path(ref.path):
                # its caller did not make it again: the caller fails with this error
                # rather than wait for it forever
                lost = NondeterministicCallError(
                    f"the @task call at {list(ref.path)} could not be re-created: running "
                    "its caller again did not make the same call (an entrypoint and the "
                    "tasks that call tasks must make the same calls, in the same order, "
                    "each time they run)"
                )
                outcomes[ref.id] = error_info(lost, None, msg.checkpoint_id)
            continue
        if task.writes:
            outcomes[ref.id] = None  # an earlier delivery saved its output, then died
            continue
        with LiveEvents(ctx.store, run, loop.sink):  # its tokens, as they come
            outcome = observe.attempt(
                run,
                task,
                loop.task_config(task),
                loop.retry_policy,
                attempts_done=ref.attempts,
                first_attempt_time=ref.first_attempt,
            )
        if isinstance(outcome, RetryLater):
            loop.drain()  # no step chunks for a failed attempt (its tokens went)
            dispatch_retry(
                ctx.store,
                ctx.broker,
                ctx.settings,
                run,
                checkpoint_id=msg.checkpoint_id,
                task=task,
                retry=outcome,
            )
            continue
        loop.record(task, outcome)
        chunks = loop.drain()
        events[ref.id] = chunks if streaming else []
        failed = outcome is not None and not isinstance(outcome, GraphInterrupt)
        if failed:
            log.error(
                "node %s failed in run %s (graph %s, thread %s, task %s): %s: %s",
                task.name,
                run.run_id,
                run.graph,
                run.thread_id,
                task.id,
                type(outcome).__name__,
                outcome,
                exc_info=outcome,
                extra=observe.log_fields(run, task),
            )
            failures.append(f"node {task.name}: {type(outcome).__name__}: {outcome}")
        outcomes[ref.id] = (
            error_info(outcome, task.name, msg.checkpoint_id)
            if outcome is not None and failed
            else None
        )
    perform_saves(loop)
    saves.flush()  # every task's writes, one round trip, before any task counts as done
    if not outcomes:
        return 0, -1
    return ctx.store.complete_tasks(
        run.run_id, msg.checkpoint_id, outcomes, ctx.worker_name, events, epoch=epoch
    )
