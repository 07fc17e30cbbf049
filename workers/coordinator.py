"""The coordinator: advances one run of one thread, one superstep at a time.

It never waits for tasks. A step with several tasks is handed to task jobs and
the coordinator returns; the last task to finish calls it again (the barrier
is counted in Postgres). A step with a single task runs right here, so a chain
of nodes pays no broker round trip per step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from graphruntime.errors import CheckpointConflict, GraphInterrupt
from graphruntime.pregel import (
    INTERRUPT,
    Pregel,
    PregelLoop,
    PreparedTask,
    RetryLater,
    recursion_error,
    run_task_attempt,
)
from workers.context import WorkerContext, error_info, flush_events, open_loop
from workers.errors import UnknownGraphError, is_transient
from workers.messages import TaskMessage, TaskRef
from workers.store import EventRow, Run

log = logging.getLogger(__name__)


def coordinate(ctx: WorkerContext, run_id: str) -> None:
    """Advance ``run_id`` as far as it can go without waiting. Safe to call twice."""
    run = ctx.store.get_run(run_id)
    if run.done:
        return
    with ctx.store.thread_lock(run.thread_id) as locked:
        if not locked:
            # another coordinator holds the thread; try again shortly
            ctx.dispatcher.coordinate(run_id, delay=ctx.settings.thread_lock_retry)
            return
        run = ctx.store.get_run(run_id)
        if run.done:
            return
        if run.status == "queued" and ctx.store.earlier_active_run(run):
            ctx.dispatcher.coordinate(run_id, delay=0.2)  # runs of a thread go in order
            return
        try:
            graph = ctx.registry.get(run.graph)
        except UnknownGraphError as exc:
            ctx.store.finish(run_id, "error", error=error_info(exc))
            return
        _advance(ctx, run, graph)


def _start(ctx: WorkerContext, run: Run, graph: Pregel) -> tuple[PregelLoop, bool]:
    """Apply the run's input; a redelivered start that already applied it continues.

    Returns the loop and whether it continues an already-started step.
    """
    loop = open_loop(ctx, graph, run, None)
    if loop.metadata.get("run_id") == run.run_id:
        ctx.store.set_running(run.run_id, loop.stop)
        return loop, True
    # an explicit checkpoint_id in the user's config is time travel: fork from there
    addressed = (run.payload.get("config") or {}).get("configurable", {}).get("checkpoint_id")
    if addressed:
        loop = open_loop(
            ctx, graph, run, run.payload.get("input"), checkpoint_id=addressed, fenced=False
        )
    else:
        loop.input = run.payload.get("input")  # the head is already loaded: apply input to it
    loop.first()
    ctx.store.set_running(run.run_id, loop.stop)
    return loop, False


def _advance(ctx: WorkerContext, run: Run, graph: Pregel) -> None:
    """Run steps until one needs task jobs, or the run ends; any failure ends the run."""
    loop: PregelLoop | None = None
    try:
        if run.status == "queued":
            loop, continuing = _start(ctx, run, graph)
        else:
            loop = open_loop(ctx, graph, run, None, reopen=True)
            continuing = True
        _steps(ctx, run, graph, loop, continuing)
    except CheckpointConflict:
        # the thread moved under us (a coordinator that lost its lock): start over from it
        log.warning(
            "run %s: thread %s advanced concurrently; re-coordinating", run.run_id, run.thread_id
        )
        ctx.dispatcher.coordinate(run.run_id, delay=ctx.settings.thread_lock_retry)
    except Exception as exc:  # the run's error, as invoke() would raise it in-process
        if is_transient(exc):
            raise  # Postgres went away: the job is retried, the run is not failed
        log.info("run %s failed: %s", run.run_id, exc, exc_info=True)
        if loop is not None:
            flush_events(ctx, run, loop)
        ctx.store.finish(run.run_id, "error", error=error_info(exc))


def _steps(ctx: WorkerContext, run: Run, graph: Pregel, loop: PregelLoop, continuing: bool) -> None:
    # invoke() reads only the run's last values: its events are written once, at the end
    streaming = bool(run.payload.get("stream_modes"))
    while True:
        try:
            if not loop.tick(continuing=continuing):
                break
        except GraphInterrupt:
            _finish_interrupted(ctx, run, loop, [])
            return
        runnable = loop.runnable_tasks()
        errors: list[dict[str, Any]] = []
        if runnable and continuing:
            # tasks that ran as jobs of this run and are done have their outcome saved
            states = ctx.store.step_states(run.run_id, loop.checkpoint["id"])
            unsent = [t for t in runnable if t.id not in states]
            if unsent:
                _dispatch(ctx, run, loop, unsent)
                return
            if any(states[t.id] != "done" for t in runnable):
                return  # the barrier is not reached yet; the last task job calls us again
            runnable = []
        if runnable:
            if len(runnable) == 1 and ctx.settings.inline_single_task:
                task = runnable[0]
                exc = run_task_attempt(
                    task, loop.task_config(task, loop.custom_writer(task)), graph.retry_policy
                )
                if isinstance(exc, RetryLater):
                    # its RetryPolicy retries it: as a job after the backoff, not asleep here
                    _dispatch(ctx, run, loop, [task], retry=exc)
                    return
                loop.commit(task, exc)
                if exc is not None and not isinstance(exc, GraphInterrupt):
                    errors.append(error_info(exc, task.name, loop.checkpoint["id"]))
                    ctx.store.add_events(run.run_id, [((), "error", errors[-1])])
            else:
                _dispatch(ctx, run, loop, runnable)
                return
        if continuing:
            # the step ran as task jobs: their errors were recorded as this run's events
            # (a finished task may still carry a stale error write from an earlier run)
            errors = ctx.store.step_errors(run.run_id, loop.checkpoint["id"])
        if errors:
            flush_events(ctx, run, loop)
            ctx.store.finish(run.run_id, "error", error=errors[0])
            return
        interrupts, interrupted = loop.step_interrupts()
        if interrupted:
            _finish_interrupted(ctx, run, loop, interrupts, pending=True)
            return
        try:
            loop.after_tick()
        except GraphInterrupt:
            _finish_interrupted(ctx, run, loop, [])
            return
        if streaming:
            flush_events(ctx, run, loop)  # a streaming client sees each step as it ends
        continuing = False
    flushed = flush_events(ctx, run, loop)
    if loop.status == "out_of_steps":
        ctx.store.finish(run.run_id, "error", error=error_info(recursion_error(loop)))
        return
    ctx.store.finish(run.run_id, "success", result=_result(ctx, run, [], flushed, loop))


def _dispatch(
    ctx: WorkerContext,
    run: Run,
    loop: PregelLoop,
    tasks: list[PreparedTask],
    *,
    retry: RetryLater | None = None,
) -> None:
    """Hand the step's tasks to task jobs; ones already handed out are the sweeper's."""
    checkpoint_id = loop.checkpoint["id"]
    flush_events(ctx, run, loop)
    by_id = {t.id: t for t in tasks}
    new = ctx.store.register_tasks(
        run.run_id, run.thread_id, checkpoint_id, [(t.id, t.path) for t in tasks]
    )
    attempts = retry.attempts if retry is not None else 0
    refs = [
        TaskRef(id=task_id, path=tuple(by_id[task_id].path), attempts=attempts) for task_id in new
    ]
    if retry is None:
        send_task_jobs(ctx, run.run_id, run.thread_id, checkpoint_id, refs)
    else:
        for ref in refs:
            retry_task_job(ctx, run.run_id, run.thread_id, checkpoint_id, ref, retry.delay)
    ctx.store.touch(run.run_id)  # after the send: a failure here must not skip it


def retry_task_job(
    ctx: WorkerContext,
    run_id: str,
    thread_id: str,
    checkpoint_id: str,
    ref: TaskRef,
    delay: float,
) -> None:
    """Send a task's next attempt as a job that starts after ``delay`` seconds."""
    hold = delay + ctx.settings.task_lease  # the sweeper leaves it alone until then
    ctx.store.schedule_retry(run_id, checkpoint_id, ref.id, ref.attempts, hold)
    message = TaskMessage(
        run_id=run_id, thread_id=thread_id, checkpoint_id=checkpoint_id, tasks=(ref,)
    )
    ctx.dispatcher.execute(message, delay=delay)


def chunk_size(ctx: WorkerContext, n_tasks: int) -> int:
    """Tasks per job: one while the step has few tasks, up to ``task_chunk_max`` for big ones.

    A job runs its tasks one after another, so chunking trades a step's parallelism
    for fewer broker messages; it starts once a step has twice ``min_jobs_per_step``
    tasks (and keeps at least that many jobs), where workers are saturated anyway.
    """
    settings = ctx.settings
    return max(1, min(settings.task_chunk_max, n_tasks // settings.min_jobs_per_step))


def send_task_jobs(
    ctx: WorkerContext, run_id: str, thread_id: str, checkpoint_id: str, refs: list[TaskRef]
) -> None:
    size = chunk_size(ctx, len(refs))
    messages = [
        TaskMessage(
            run_id=run_id,
            thread_id=thread_id,
            checkpoint_id=checkpoint_id,
            tasks=tuple(refs[i : i + size]),
        )
        for i in range(0, len(refs), size)
    ]
    send_many = getattr(ctx.dispatcher, "execute_many", None)
    if callable(send_many):
        send_many(messages)
    else:
        for message in messages:
            ctx.dispatcher.execute(message)


def _finish_interrupted(
    ctx: WorkerContext, run: Run, loop: PregelLoop, interrupts: list[Any], *, pending: bool = False
) -> None:
    if pending:
        loop.status = "interrupted"
        loop.interrupts = list(interrupts)
        loop.emit("values", loop.values_with_pending())
    flushed = flush_events(ctx, run, loop)
    ctx.store.finish(run.run_id, "interrupted", result=_result(ctx, run, interrupts, flushed))


def _result(
    ctx: WorkerContext,
    run: Run,
    interrupts: list[Any],
    flushed: Sequence[EventRow],
    finished: PregelLoop | None = None,
) -> Any:
    """What ``invoke`` returns: the last root values chunk, plus the interrupts.

    The chunk is usually among the events just ``flushed``. A finished run without
    one (its last chunks were lost with a coordinator that died after saving the final
    checkpoint) returns the final state's output, which that chunk held; otherwise
    older chunks are read back.
    """
    root_values = [payload for ns, mode, payload in flushed if mode == "values" and ns == ()]
    latest: Any = root_values[-1] if root_values else None
    if not root_values and finished is not None:
        latest = finished.output()
    if latest is None and not root_values:
        for event in ctx.store.events_after(run.run_id, 0):
            if event.mode == "values" and event.ns == ():
                latest = event.payload
    if isinstance(latest, dict) and INTERRUPT in latest:
        latest = {k: v for k, v in latest.items() if k != INTERRUPT}
    if interrupts:
        return {**(latest or {}), INTERRUPT: list(interrupts)}
    return latest
