"""The coordinator: advances a thread's runs, one superstep at a time, with the shared driver.

A coordinator job leases the thread (a row in Postgres, valid while this worker's
heartbeat is fresh: no connection is held for it), then drives the thread's oldest
run with :func:`graphruntime.pregel.driver.drive`, the loop the in-process runtime uses.
Its executor (:class:`ClusterExecutor`) runs a step's single task inline, so a chain
of nodes pays no broker round trip per step, or dispatches the step's tasks as jobs
and suspends the run; the job that completes the step's barrier calls the
coordinator again, which re-opens the step and settles it from what the jobs saved.

A message may name several runs of other threads (a bulk submit or resume): the job
drives them one after another with the same :func:`advance` and ends them together,
in one transaction (:class:`Batch`).
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from graphruntime.checkpoint import CheckpointTuple, SerializerProtocol
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict
from graphruntime.pregel import Pregel
from graphruntime.pregel.driver import (
    INTERRUPT,
    LOAD,
    StepLoop,
    StepSuspended,
    StepView,
    drive,
)
from workers import observability as observe
from workers._cancel import close_thread, stop_runs
from workers._round import Batch, Lease, _send_again
from workers._saves import RunSaves
from workers._step_executor import ClusterExecutor, RunEvents, StepRecords
from workers.context import WorkerContext, at_run_start, run_loop
from workers.errors import (
    RemoteTaskError,
    UnknownGraphError,
    WorkerError,
    error_info,
    is_transient,
)
from workers.heartbeat import unserved_reason
from workers.store import Claim, Run, RunEnd, RunStatus, Wait

log = logging.getLogger(__name__)

LACKING_GRAPH_DELAY = 5.0
"""Seconds before a run this worker lacks the graph of is offered again."""

MAX_RUNS_PER_JOB = 16
"""Rounds a coordinator job takes (each one run per thread: those named, then those
queued behind them meanwhile) before handing the threads back."""


class UndecodableRunError(WorkerError):
    """A run whose input this worker cannot decode; the run ends with this error."""


def coordinate(ctx: WorkerContext, run_id: str) -> list[str]:
    """Advance the thread of ``run_id`` (see :func:`coordinate_many`). Safe to call twice."""
    return coordinate_many(ctx, [run_id])


def coordinate_many(
    ctx: WorkerContext, run_ids: Sequence[str], claims: Sequence[Claim] | None = None
) -> list[str]:
    """Advance the threads of ``run_ids`` as far as they go without waiting. Safe to call twice.

    Returns the runs that failed here, one line each (their errors are recorded).
    ``claims``: the runs' claims if the caller made them (workers/_drain.py), in order.

    Runs of a thread go in order: whichever job holds the thread's lease advances
    its oldest run, then the next; a job that finds the lease taken leaves its run
    to the holder, which finds it when it releases the lease. The runs a round ends
    are ended together (:class:`Batch`); the runs queued behind them meanwhile are the
    next round's.
    """
    failures: list[str] = []
    pending = list(dict.fromkeys(run_ids))
    if claims is None or ctx.job_token is None:  # a caller's claims carry its job's token
        ctx.job_token = uuid.uuid4().hex
    try:
        for _ in range(MAX_RUNS_PER_JOB):
            pending, claims = _round(ctx, pending, failures, claims), None
            if not pending:
                return failures
    finally:
        ctx.job_token = None
    # hand the threads on rather than hold them for long
    ctx.broker.send_coordinates(pending, per_message=ctx.settings.coordinate_batch)
    return failures


def _round(
    ctx: WorkerContext,
    run_ids: Sequence[str],
    failures: list[str],
    claims: Sequence[Claim] | None = None,
) -> list[str]:
    """Lease the runs' threads (one round trip), advance each leased thread's oldest run
    with the shared driver, one after another, and end them together; the runs that
    follow the ended ones.

    Runs still unstarted after ``coordinate_budget`` seconds are handed back (their threads
    freed, their messages sent again) so that other workers take them meanwhile: slow
    runs spread over the cluster, and a round's ends wait for at most that long.
    """
    if claims is None:
        claims = ctx.store.claim_runs(run_ids, ctx.worker_name, ctx.stale, ctx.job_token)
    batch = Batch(ctx, failures, next((c.epoch for c in claims if c.found), None))
    runs: list[Run] = []
    for run_id, claim in zip(run_ids, claims, strict=True):
        if not claim.found:
            log.warning("dropping coordinate message for unknown run %s", run_id)
        elif claim.leased and claim.run is not None and batch.take(claim.run.thread_id):
            runs.append(claim.run)  # a thread named twice: its first claim shows its status
    started, done = time.monotonic(), 0
    try:
        heads = _heads(ctx, runs)
        for run in runs:
            if done and time.monotonic() - started > ctx.settings.coordinate_budget:
                break
            lease = batch.leases[run.thread_id]
            done += 1
            try:
                with observe.run(run):
                    advance(ctx, run, lease, failures, saved=heads.get(run.run_id, LOAD))
            except BaseException:
                batch.held.discard(run.run_id)  # redone from what was stored, by the retry
                raise
            finally:
                lease.release()  # not ended: waits on its task jobs, or was re-sent
    except BaseException:
        batch.close(runs[done:])  # what ended so far, and the threads not reached
        raise
    following = batch.close(runs[done:])
    if runs[done:]:
        per_message = min(done, ctx.settings.coordinate_batch)  # as many as fitted here
        ctx.broker.send_coordinates([r.run_id for r in runs[done:]], per_message=per_message)
    return following


def _heads(ctx: WorkerContext, runs: Sequence[Run]) -> dict[str, CheckpointTuple | None]:
    """The head checkpoints of the queued runs' threads, read in one round trip, under
    their leases. Only queued runs: one under way may have task jobs still saving writes
    on its step, which it must read when it re-opens the step, not before."""
    fresh = [run for run in runs if run.status == "queued"]
    if len(fresh) < 2:
        return {}  # a run alone loads its own, as ever
    configs: list[RunnableConfig] = [{"configurable": {"thread_id": r.thread_id}} for r in fresh]
    loaded = ctx.saver.get_tuples(configs)
    return {run.run_id: head for run, head in zip(fresh, loaded, strict=True)}


def advance(
    ctx: WorkerContext,
    run: Run,
    lease: Lease,
    failures: list[str] | None = None,
    *,
    saved: CheckpointTuple | Any | None = LOAD,
) -> bool:
    """Drive one run until it ends (True) or waits for its task jobs (False).

    ``lease``: the thread's, held by this job; the run's end gives it up. ``saved``: the
    thread's head checkpoint if the caller read it already (under the lease).

    Any failure that is not an outage ends the run with that error, as ``invoke``
    would raise it in-process; an outage propagates, so the job is retried.
    """
    if run.payload_error is not None:
        exc = UndecodableRunError(
            f"Run {run.run_id} cannot be decoded by this worker: {run.payload_error}"
        )
        _end(ctx, run, "error", error=error_info(exc), lease=lease)
        return True
    graph = _served(ctx, run, lease, failures)
    if graph is None:
        return lease.ending  # ended with the error, or left to a worker that serves it
    if run.kind == "cancel":
        _cancel(ctx, run, graph, lease)
        return True
    events = RunEvents(ctx, run)
    records = StepRecords(ctx, run.run_id)
    loop: StepLoop | None = None
    # every write of the run commits lazily (the run's end or a step's dispatch is a
    # durable commit that makes them durable first); with durability "async" its
    # checkpoints are held and stored with the round's other runs' (RoundSaves)
    held = None if run.payload.durability == "sync" else lease.batch.held
    saves = RunSaves(ctx.saver, round=held, key=run.run_id)
    try:
        loop, reentering = _open(ctx, run, graph, saves, records, saved)
        # a step re-opened after its jobs ran: what they recorded, read once
        recorded = records.rows(loop.view().checkpoint_id) if reentering else None
        executor = observe.steps(
            ClusterExecutor(ctx, run, events, saves, recorded=recorded, epoch=lease.batch.epoch),
            run,
        )
        events.extend(drive(loop, executor))
        saves.hand_over()  # its last writes: stored with its checkpoints (or now, "sync")
    except StepSuspended:
        saves.flush()
        events.store()
        return False
    except CheckpointConflict:
        _start_over(ctx, run)
        return False
    except Exception as exc:
        if is_transient(exc):
            raise
        remote = isinstance(exc, RemoteTaskError)  # its task job logged the traceback
        log.error(
            "run %s failed (graph %s, thread %s): %s: %s",
            run.run_id,
            run.graph,
            run.thread_id,
            exc.info.get("type") if isinstance(exc, RemoteTaskError) else type(exc).__name__,
            exc,
            exc_info=None if remote else exc,
        )
        try:
            saves.flush()  # the failed step's writes: its sibling tasks' and the error
        except CheckpointConflict:
            _start_over(ctx, run)  # its earlier steps were refused: redo it from the head
            return False
        except Exception as refused:
            if is_transient(refused):
                raise
            log.error("run %s: its last writes could not be stored: %s", run.run_id, refused)
        events.store()
        info = exc.info if isinstance(exc, RemoteTaskError) else error_info(exc)
        if failures is not None:
            failures.append(f"run {run.run_id}: {info.get('type')}: {info.get('message')}")
        waits = _waits(ctx, run, loop) if loop is not None else None
        _end(ctx, run, "error", error=info, inbox=waits, lease=lease)
        return True
    events.store()
    waits = _waits(ctx, run, loop)
    view = loop.view()
    status: RunStatus = (
        "interrupted"
        if view.status in ("interrupted", "interrupt_before", "interrupt_after")
        else "success"
    )
    _end(ctx, run, status, result=_result(loop, view, events), inbox=waits, lease=lease)
    return True


def _served(
    ctx: WorkerContext, run: Run, lease: Lease, failures: list[str] | None
) -> Pregel | None:
    """The run's graph; None if this worker does not serve it (the run is left to a
    worker that does, for a while, then ends with the error)."""
    try:
        return ctx.registry.get(run.graph)
    except UnknownGraphError as exc:
        # the client knows the graph, this worker does not (a rolling deploy, a worker
        # pool serving other graphs): leave the run to a live worker that serves it, for
        # a while; when none does (their heartbeats say which graphs), fail it at once
        waited = (datetime.now(UTC) - run.created_at).total_seconds()
        reason = unserved_reason(ctx.store, run.graph, ctx.stale, waited)
        if reason is None and waited > ctx.settings.unserved_graph_timeout:
            reason = (
                f"{exc} No worker took this run of graph {run.graph!r} for {waited:.0f}s "
                "(GRAPHRUNTIME_UNSERVED_GRAPH_TIMEOUT)."
            )
        if reason is not None:
            unserved = UnknownGraphError(reason)
            _end(ctx, run, "error", error=error_info(unserved), lease=lease)
            if failures is not None:
                failures.append(f"run {run.run_id}: UnknownGraphError: {unserved}")
            return None
        log.warning(
            "run %s is of graph %r, which this worker does not serve; left for another worker",
            run.run_id,
            run.graph,
        )
        ctx.broker.send_coordinate(run.run_id, delay=LACKING_GRAPH_DELAY)
        return None


def _cancel(ctx: WorkerContext, run: Run, graph: Pregel, lease: Lease) -> None:
    """A cancel run, under its thread's lease (see workers/_cancel.py); a client that
    made the barrier already but lacks the graph's code leaves the checkpoint to it."""
    stopped = stop_runs(ctx.store, run, ctx.stale)
    close_thread(graph, ctx.saver.fenced(), run, stopped)
    _end(ctx, run, "success", result=stopped.result(), inbox=[], lease=lease)


def _start_over(ctx: WorkerContext, run: Run) -> None:
    """The thread moved under the run (a coordinator that lost its lease): it is sent
    again, to start over from where the thread is."""
    log.warning("run %s: thread %s advanced concurrently; re-sent", run.run_id, run.thread_id)
    _send_again(ctx, run.run_id)


def _open(
    ctx: WorkerContext,
    run: Run,
    graph: Pregel,
    saves: RunSaves,
    records: StepRecords,
    saved: CheckpointTuple | Any | None = LOAD,
) -> tuple[StepLoop, bool]:
    """The run's loop, started or re-opened; and whether it re-enters a dispatched step.

    ``first()`` is given the run's id: a run that started before (a redelivered job,
    a coordinator that died) re-opens its step instead of applying its input twice.
    """
    command = run.payload.input
    loop = run_loop(
        graph, run, saves.saver, saved=saved, task_errors=records.errors, saver_io=saves
    )
    if not at_run_start(loop, run):
        # the run saved a checkpoint of its own: it is under way past its input
        if run.stop is None:
            ctx.store.set_running(run.run_id, loop.view().stop)
        return loop, True
    addressed = (run.payload.config.get("configurable") or {}).get("checkpoint_id")
    if addressed and run.status == "queued":
        # an explicit checkpoint_id is time travel: fork from there (not fenced)
        saves.unfence()  # time travel forks: this run's puts are not fenced
        loop = run_loop(
            graph,
            run,
            saves.saver,
            checkpoint_id=addressed,
            task_errors=records.errors,
            saver_io=saves,
        )
    loop.first(command, run_id=run.run_id)
    return loop, run.status != "queued"


def _end(
    ctx: WorkerContext,
    run: Run,
    status: RunStatus,
    *,
    result: Any = None,
    error: dict[str, Any] | None = None,
    inbox: Sequence[Wait] | None = None,
    lease: Lease,
) -> None:
    def ended(end: RunEnd) -> None:
        observe.run_end_committed(run.graph, end.status)
        origin = run.origin or {}
        if end.status == "error" and origin.get("route") == "queue" and origin.get("message"):
            # a resume sent as a queue message: refused messages go to the dead letters
            info = end.error or {}
            reason = f"{info.get('type', 'Error')}: {info.get('message', '')}"
            ctx.broker.dead_letter(str(origin["message"]), reason)

    lease.finish(run, status, result, error, inbox, then=ended)
    observe.run_ending(status)  # in the run's span; counted once its batch commits


def _waits(ctx: WorkerContext, run: Run, loop: StepLoop) -> list[Wait]:
    """What the thread waits on as the run ends: the pending interrupts of its step, as
    inbox rows, in task order."""
    serde = ctx.saver.serde
    checkpoint_id = loop.view().checkpoint_id
    waits: list[Wait] = []
    seen: set[str] = set()
    for task in loop.view().tasks:
        for intr in loop.waiting_interrupts(task.id):
            if intr.id in seen:
                continue
            seen.add(intr.id)
            waits.append(
                Wait(
                    graph=run.graph,
                    thread_id=run.thread_id,
                    interrupt_id=intr.id,
                    node=task.name,
                    namespace=task.checkpoint_ns,
                    value=_json_value(serde, intr.value),
                    run_id=run.run_id,
                    checkpoint_id=checkpoint_id,
                    deadline=intr.deadline,
                    default=serde.dumps_typed(intr.default) if intr.deadline else None,
                    response_schema=intr.response_schema,
                )
            )
    return waits


def _json_value(serde: SerializerProtocol, value: Any) -> Any:
    """The value as JSON, as the serde stores it (bytes it cannot: base64)."""
    kind, data = serde.dumps_typed(value)
    if kind == "json":
        return json.loads(data)
    return {"__bytes__": base64.b64encode(data).decode("ascii")}


def _result(loop: StepLoop, view: StepView, events: RunEvents) -> Any:
    """What ``invoke`` returns: the last root ``values`` chunk, plus the interrupts."""
    latest = events.last_values if events.has_values else loop.output()
    if isinstance(latest, dict) and INTERRUPT in latest:
        latest = {k: v for k, v in latest.items() if k != INTERRUPT}
    if view.interrupts:
        return {**(latest or {}), INTERRUPT: list(view.interrupts)}
    return latest
