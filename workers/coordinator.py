"""The coordinator: advances a thread's runs, one superstep at a time, with the shared driver.

A coordinator job leases the thread (a row in Postgres, valid while this worker's
heartbeat is fresh: no connection is held for it), then drives the thread's oldest
run with :func:`graphruntime.pregel.drive`, the loop the in-process runtime uses.
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
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

from graphruntime.checkpoint import CheckpointTuple, SerializerProtocol
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict, GraphInterrupt
from graphruntime.pregel import (
    INTERRUPT,
    LOAD,
    Pregel,
    PregelLoop,
    PreparedTask,
    RetryLater,
    StepSuspended,
    StreamChunk,
    TaskResult,
    drive,
    task_order,
)
from workers import observability as observe
from workers._call_jobs import CallJobs, only_calls_recorded
from workers._cancel import close_thread, stop_runs
from workers._deferred_writes import DeferredWrites
from workers._held_group import HeldGroup
from workers._live_events import LiveEvents
from workers.context import WorkerContext, at_run_start, run_loop
from workers.dispatch import dispatch_retry, dispatch_step
from workers.errors import (
    RemoteTaskError,
    StoreRecoveredError,
    UnknownGraphError,
    WorkerError,
    error_info,
    is_transient,
    rebuild_error,
)
from workers.heartbeat import unserved_reason
from workers.store import Claim, Run, RunEnd, RunStatus, StepTask, Wait

log = logging.getLogger(__name__)

LACKING_GRAPH_DELAY = 5.0
"""Seconds before a run this worker lacks the graph of is offered again."""

RELEASE_PATIENCE = 60.0
"""Seconds a job keeps trying to free a thread's lease through an outage."""

MAX_RUNS_PER_JOB = 16
"""Rounds a coordinator job takes (each one run per thread: those named, then those
queued behind them meanwhile) before handing the threads back."""

_T = TypeVar("_T")


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


class Batch:
    """The thread leases a coordinator job's round holds, and the ends of its runs.

    The runs' checkpoints, held as they were made (:class:`HeldGroup`, durability
    "async"), are stored together once every run of the round was advanced: one
    transaction, one round trip, committed lazily. Then the ends are written together,
    with the leases they free: one transaction, one durable commit. The WAL is flushed
    in order, so that commit also makes the checkpoints durable, all before the job is
    acked (late acks). No client sees a run of the round end before that commit. A
    crash before it loses the round's unstored checkpoints and its ends: the
    redelivered job (or the sweeper) redoes each run from its stored checkpoints, which
    every run is safe for.
    """

    def __init__(self, ctx: WorkerContext, failures: list[str], epoch: str | None) -> None:
        self.ctx = ctx
        self.failures = failures
        self.epoch = epoch
        """The server's epoch when the round claimed its runs: the ends and dispatches
        that make the round's asynchronous commits durable are refused if it changed."""
        self.leases: dict[str, Lease] = {}
        self.ends: list[tuple[RunEnd, Callable[[RunEnd], None]]] = []
        self.held = HeldGroup(ctx.saver.lazy())

    def take(self, thread_id: str) -> bool:
        """Hold the thread's lease (claimed) in this batch; False if it holds it already."""
        if thread_id in self.leases:
            return False
        self.leases[thread_id] = Lease(self, thread_id)
        return True

    def close(self, unstarted: Sequence[Run] = ()) -> list[str]:
        """End the runs that ended and free every lease still held, in one transaction;
        the thread's next run still to finish, per ended run that has one.

        ``unstarted``: claimed runs nothing was done for; those the claim marked running
        are queued again (a queued run's start decides, e.g., whether it travels in time).
        """
        ctx = self.ctx
        requeue = [run.run_id for run in unstarted if run.status == "queued"]
        redo: list[str] = []
        try:
            ends = self._store_checkpoints(redo)
            held = [t for t, lease in self.leases.items() if lease.held and not lease.ending]
            if not ends and not held:
                return []
            released = _patiently(
                lambda: ctx.store.finish_and_release_many(
                    [end for end, _ in ends],
                    worker=ctx.worker_name,
                    free=held,
                    requeue=requeue,
                    epoch=self.epoch,
                ),
                f"ending {len(ends)} runs",
            )
        except Exception:
            self._free_each()  # a lease left with this live worker would stall its thread
            raise
        for lease in self.leases.values():
            lease.held = False
        for run_id in redo:  # its thread moved on meanwhile: start over from where it is
            _send_again(ctx, run_id)
        following = []
        for (end, then), done in zip(ends, released, strict=False):
            if done.error is not None:
                # not ended: the sweeper finds it stalled and runs it again (it then
                # returns the state as its checkpoint saved it)
                log.error("run %s could not be ended: %s", end.run_id, done.error)
                self.failures.append(f"run {end.run_id}: {type(done.error).__name__}: {done.error}")
                continue
            then(end)
            if done.following is not None:
                following.append(done.following)
        return following

    def _store_checkpoints(self, redo: list[str]) -> list[tuple[RunEnd, Callable[[RunEnd], None]]]:
        """Store the checkpoints the ending runs held, all in one round trip; the ends to
        write. A run whose puts were refused (its thread moved under it) does not end:
        its id goes to ``redo``; one whose puts failed ends with that error."""
        ends, self.ends = self.ends, []
        self.held.store()
        kept = []
        for end, then in ends:
            error = self.held.error_of(end.run_id)
            if error is None:
                kept.append((end, then))
            elif isinstance(error, CheckpointConflict):
                log.warning("run %s: its checkpoints were refused (%s); re-sent", end.run_id, error)
                self.leases[end.thread_id].ending = False  # freed with the others
                redo.append(end.run_id)
            else:
                log.error("run %s: its checkpoints could not be stored: %s", end.run_id, error)
                self.failures.append(f"run {end.run_id}: {type(error).__name__}: {error}")
                failed = dataclasses.replace(
                    end, status="error", result=None, error=error_info(error), inbox=None
                )
                kept.append((failed, then))
        return kept

    def _free_each(self) -> None:
        for lease in self.leases.values():
            lease.ending = False
            try:
                lease.release()
            except Exception:  # the next lease still gets its chance
                log.exception("thread %s: its lease could not be freed", lease.thread_id)


class Lease:
    """A thread's lease as a coordinator job holds it: given up once, by the run's end
    (with the batch's other ends, in the same transaction) or by the job when the run
    did not end."""

    def __init__(self, batch: Batch, thread_id: str) -> None:
        self.batch = batch
        self.thread_id = thread_id
        self.held = True
        self.ending = False

    def finish(
        self,
        run: Run,
        status: RunStatus,
        result: Any,
        error: dict[str, Any] | None,
        inbox: Sequence[Wait] | None,
        then: Callable[[RunEnd], None],
    ) -> None:
        """End ``run`` and give the lease up when the batch closes, once its held
        checkpoints are stored; ``then`` once it ended."""
        end = RunEnd(run.run_id, self.thread_id, status, result, error, inbox)
        self.batch.ends.append((end, then))
        self.ending = True

    def release(self) -> None:
        """Give the lease up now, unless the run is ending (the batch frees it then).

        An outage is waited out (up to ``RELEASE_PATIENCE`` seconds): a lease left held
        by a live worker would keep every other job off the thread. A lease still not
        freed then is left to this process's heartbeat, which frees the leases no job of
        the process holds once it can.
        """
        if self.held and not self.ending:
            ctx = self.batch.ctx
            _patiently(
                lambda: ctx.store.release_thread(self.thread_id, ctx.worker_name),
                f"freeing thread {self.thread_id}'s lease",
            )
            self.held = False


def _patiently(call: Callable[[], _T], doing: str) -> _T:
    """``call()``, retried through an outage for up to ``RELEASE_PATIENCE`` seconds."""
    give_up = time.monotonic() + RELEASE_PATIENCE
    delay = 0.1
    while True:
        try:
            return call()
        except Exception as exc:
            # a crash took back what the call was to make durable: redo the job, do not
            # commit it here
            recovered = isinstance(exc, StoreRecoveredError)
            if recovered or not is_transient(exc) or time.monotonic() > give_up:
                raise
            log.warning("%s failed (%s); retrying", doing, exc)
            time.sleep(delay)
            delay = min(2 * delay, 2.0)


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
    loop: PregelLoop | None = None
    # every write of the run commits lazily (the run's end or a step's dispatch is a
    # durable commit that makes them durable first); with durability "async" its
    # checkpoints are held and stored with the round's other runs' (HeldGroup)
    held = None if run.payload.durability == "sync" else lease.batch.held
    saver = DeferredWrites(ctx.saver.fenced().lazy(), group=held, key=run.run_id)
    try:
        loop, reentering = _open(ctx, run, graph, saver, saved)
        # a step re-opened after its jobs ran: what they recorded, read once
        recorded = ctx.store.step_tasks(run.run_id, loop.checkpoint["id"]) if reentering else None
        loop.task_errors = recorded_errors(recorded or {})
        executor = observe.steps(
            ClusterExecutor(ctx, run, events, saver, recorded=recorded, epoch=lease.batch.epoch),
            run,
        )
        events.extend(drive(loop, executor))
        saver.hand_over()  # its last writes: stored with its checkpoints (or now, "sync")
    except StepSuspended:
        saver.flush()
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
            saver.flush()  # the failed step's writes: its sibling tasks' and the error
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
    status: RunStatus = (
        "interrupted"
        if loop.status in ("interrupted", "interrupt_before", "interrupt_after")
        else "success"
    )
    _end(ctx, run, status, result=_result(loop, events), inbox=waits, lease=lease)
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


def _send_again(ctx: WorkerContext, run_id: str) -> None:
    """Send the run again, after its lease holder's death would have shown."""
    ctx.broker.send_coordinate(run_id, delay=2 * ctx.settings.heartbeat_interval)


def _open(
    ctx: WorkerContext,
    run: Run,
    graph: Pregel,
    saver: DeferredWrites,
    saved: CheckpointTuple | Any | None = LOAD,
) -> tuple[PregelLoop, bool]:
    """The run's loop, started or re-opened; and whether it re-enters a dispatched step.

    ``first()`` is given the run's id: a run that started before (a redelivered job,
    a coordinator that died) re-opens its step instead of applying its input twice.
    """
    command = run.payload.input
    loop = run_loop(graph, run, saver, saved=saved)
    if not at_run_start(loop, run):
        # the run saved a checkpoint of its own: it is under way past its input
        if run.stop is None:
            ctx.store.set_running(run.run_id, loop.stop)
        return loop, True
    addressed = (run.payload.config.get("configurable") or {}).get("checkpoint_id")
    if addressed and run.status == "queued":
        # an explicit checkpoint_id is time travel: fork from there (not fenced)
        saver.flush()
        saver.inner = ctx.saver.lazy()  # time travel forks: this run's puts are not fenced
        loop = run_loop(graph, run, saver, checkpoint_id=addressed)
    loop.first(command, run_id=run.run_id)
    return loop, run.status != "queued"


class ClusterExecutor:
    """Runs a step's tasks for the coordinator: inline, or as task jobs (suspending the run).

    ``recorded``: the coordinator re-opened a run that was under way, so the first step
    it plans may be one whose tasks already ran as jobs; these are the step's task rows
    (None: the run was not under way), and their outcomes are read from what the jobs
    saved instead of running anything.
    """

    def __init__(
        self,
        ctx: WorkerContext,
        run: Run,
        events: RunEvents,
        saver: DeferredWrites,
        *,
        recorded: dict[str, StepTask] | None,
        epoch: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.run = run
        self.events = events
        self.saver = saver
        self.recorded = recorded
        self.epoch = epoch

    def execute(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]:
        ctx, run = self.ctx, self.run
        checkpoint_id = loop.checkpoint["id"]
        inline = len(tasks) == 1 and ctx.settings.inline_single_task
        sent_calls: dict[str, StepTask] = {}
        if self.recorded is not None:
            recorded, self.recorded = self.recorded, None
            if recorded and inline and only_calls_recorded(tasks, recorded):
                # the step's task ran here and sent its @task calls as jobs
                if any(row.status != "done" for row in recorded.values()):
                    raise StepSuspended  # the last call's job calls us again
                self.events.discard()  # the step's start was streamed by the first pass
                sent_calls = recorded
                loop.adopt_resume(sent_calls)  # a call answered the run's resume value
            elif recorded:
                yield from self._recorded(loop, tasks, recorded)
                return
        self.events.store()  # a streaming client sees each step as it begins
        if inline:
            task = tasks[0]
            calls = CallJobs(sent_calls)
            loop.calls = calls
            try:
                with (
                    self.saver.storing_within(),  # a slow node: what is held is stored
                    LiveEvents(ctx.store, run, loop.sink),  # its tokens, as they come
                ):
                    outcome = observe.attempt(
                        run, task, loop.task_config(task), loop.graph.retry_policy
                    )
            finally:
                loop.calls = None
            if unsent := calls.to_send():
                # the task waits on calls with no result yet: they run as jobs, then it
                # runs again (whatever it did meanwhile is done again then)
                self._send(loop, unsent)
            if isinstance(outcome, RetryLater):
                # its RetryPolicy retries it: as a job after the backoff, not asleep here
                self._leaving(loop)
                dispatch_retry(
                    ctx.store,
                    ctx.broker,
                    ctx.settings,
                    run_id=run.run_id,
                    graph=run.graph,
                    thread_id=run.thread_id,
                    checkpoint_id=checkpoint_id,
                    task=task,
                    retry=outcome,
                    epoch=self.epoch,
                )
                raise StepSuspended
            yield TaskResult(task, outcome)
            return
        if tasks:
            self._send(loop, tasks)

    def _send(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> NoReturn:
        """Send ``tasks`` of the step as jobs; the run waits for them (StepSuspended)."""
        self._leaving(loop)
        dispatch_step(
            self.ctx.store,
            self.ctx.broker,
            self.ctx.settings,
            run_id=self.run.run_id,
            graph=self.run.graph,
            thread_id=self.run.thread_id,
            checkpoint_id=loop.checkpoint["id"],
            tasks=tasks,
            epoch=self.epoch,
        )
        raise StepSuspended

    def _leaving(self, loop: PregelLoop) -> None:
        """The run goes on in other jobs: record the last step it may take, which they
        re-open it with (an inline run never needs it), and everything written so far
        (the step's null writes: a Command's update and resume values)."""
        self.saver.flush()
        if self.run.stop is None:
            self.ctx.store.set_running(self.run.run_id, loop.stop)

    def _recorded(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask], recorded: dict[str, StepTask]
    ) -> Iterator[TaskResult]:
        """The outcomes task jobs saved for this step, once all of them are in."""
        # The tasks' updates were streamed by the jobs that ran them; planning the step
        # again replayed the finished ones as cached: not news to the client.
        self.events.discard()
        unfinished = [t for t in tasks if t.id in recorded and recorded[t.id].status != "done"]
        unsent = [t for t in tasks if t.id not in recorded]
        if unfinished:
            raise StepSuspended  # the barrier is not reached: the last job calls us again
        if unsent:
            # tasks of this step nobody sent (retried inline after a crash): send them now
            self._send(loop, unsent)
        for task in tasks:
            row = recorded[task.id]
            outcome: BaseException | None = None
            if row.error is not None:
                outcome = RemoteTaskError(row.error)
            elif interrupts := loop.recorded_interrupts(task.id):
                outcome = GraphInterrupt(tuple(interrupts))
            yield TaskResult(task, outcome, recorded=True)


def recorded_errors(rows: dict[str, StepTask]) -> dict[str, BaseException]:
    """The errors task jobs recorded for a step's tasks, rebuilt with their types."""
    return {task_id: rebuild_error(row.error) for task_id, row in rows.items() if row.error}


class RunEvents:
    """A run's stream chunks as the driver yields them, saved step by step when it streams.

    ``invoke`` runs store none: their client reads only the run's result, the last
    root ``values`` chunk, which is remembered here.
    """

    def __init__(self, ctx: WorkerContext, run: Run) -> None:
        self.ctx = ctx
        self.run = run
        self.streaming = bool(run.payload.stream_modes)
        self.pending: list[StreamChunk] = []
        self.last_values: Any = None
        self.has_values = False

    def extend(self, chunks: Iterator[StreamChunk]) -> None:
        for chunk in chunks:
            ns, mode, payload = chunk
            if mode == "values" and ns == ():
                self.last_values, self.has_values = payload, True
            if self.streaming:
                self.pending.append(chunk)

    def discard(self) -> None:
        self.pending = []

    def store(self) -> None:
        if self.pending:
            self.ctx.store.append_events(self.run.run_id, self.pending)
            self.pending = []


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


def _waits(ctx: WorkerContext, run: Run, loop: PregelLoop) -> list[Wait]:
    """What the thread waits on as the run ends: the pending interrupts of its step, as
    inbox rows, in task order."""
    serde = ctx.saver.serde
    waits: list[Wait] = []
    seen: set[str] = set()
    for task in sorted(loop.tasks.values(), key=task_order):
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
                    checkpoint_id=loop.checkpoint["id"],
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


def _result(loop: PregelLoop, events: RunEvents) -> Any:
    """What ``invoke`` returns: the last root ``values`` chunk, plus the interrupts."""
    latest = events.last_values if events.has_values else loop.output()
    if isinstance(latest, dict) and INTERRUPT in latest:
        latest = {k: v for k, v in latest.items() if k != INTERRUPT}
    if loop.interrupts:
        return {**(latest or {}), INTERRUPT: list(loop.interrupts)}
    return latest
