"""How the coordinator runs a step's tasks: inline, or as task jobs (the run waits),
and what re-opening a step settles from (the task rows its jobs recorded)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from graphruntime.errors import GraphInterrupt
from graphruntime.pregel.driver import (
    PreparedTask,
    RetryLater,
    StepLoop,
    StepSuspended,
    StreamChunk,
    TaskResult,
)
from workers import observability as observe
from workers._call_jobs import CallJobs, only_calls_recorded
from workers._live_events import LiveEvents
from workers._saves import RunSaves
from workers.context import WorkerContext
from workers.dispatch import dispatch_retry, dispatch_step
from workers.errors import (
    RemoteTaskError,
    WorkerError,
    rebuild_error,
)
from workers.store import Run, StepTask


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
        saves: RunSaves,
        *,
        recorded: dict[str, StepTask] | None,
        epoch: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.run = run
        self.events = events
        self.saves = saves
        self.recorded = recorded
        self._calls: CallJobs | None = None
        self.epoch = epoch

    def submit_call(self, loop: StepLoop, task: PreparedTask) -> Any:
        """A ``@task`` call of the task this executor runs inline (see :class:`CallJobs`)."""
        if self._calls is None:
            raise WorkerError(
                f"the @task call {task.name} was made outside a task the coordinator runs; "
                "this is a bug in graphruntime, please report it"
            )
        return self._calls.submit_call(loop, task)

    def execute(self, loop: StepLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]:
        ctx, run = self.ctx, self.run
        checkpoint_id = loop.view().checkpoint_id
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
            calls = self._calls = CallJobs(sent_calls)
            try:
                with (
                    self.saves.storing_within(),  # a slow node: what is held is stored
                    LiveEvents(ctx.store, run, loop.sink),  # its tokens, as they come
                ):
                    outcome = observe.attempt(run, task, loop.task_config(task), loop.retry_policy)
            finally:
                self._calls = None
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
                    run,
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

    def _send(self, loop: StepLoop, tasks: Sequence[PreparedTask]) -> NoReturn:
        """Send ``tasks`` of the step as jobs; the run waits for them (StepSuspended)."""
        self._leaving(loop)
        dispatch_step(
            self.ctx.store,
            self.ctx.broker,
            self.ctx.settings,
            run_id=self.run.run_id,
            graph=self.run.graph,
            thread_id=self.run.thread_id,
            checkpoint_id=loop.view().checkpoint_id,
            tasks=tasks,
            epoch=self.epoch,
        )
        raise StepSuspended

    def _leaving(self, loop: StepLoop) -> None:
        """The run goes on in other jobs: record the last step it may take, which they
        re-open it with (an inline run never needs it), and everything written so far
        (the step's null writes: a Command's update and resume values)."""
        self.saves.flush()
        if self.run.stop is None:
            self.ctx.store.set_running(self.run.run_id, loop.view().stop)

    def _recorded(
        self, loop: StepLoop, tasks: Sequence[PreparedTask], recorded: dict[str, StepTask]
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


class StepRecords:
    """A run's task rows of one step (the barrier), read once per step: what re-opening
    the step settles from, and the errors its jobs recorded (``RunOptions.task_errors``)."""

    def __init__(self, ctx: WorkerContext, run_id: str) -> None:
        self.ctx = ctx
        self.run_id = run_id
        self._rows: tuple[str, dict[str, StepTask]] | None = None

    def rows(self, checkpoint_id: str) -> dict[str, StepTask]:
        if self._rows is None or self._rows[0] != checkpoint_id:
            self._rows = (checkpoint_id, self.ctx.store.step_tasks(self.run_id, checkpoint_id))
        return self._rows[1]

    def errors(self, checkpoint_id: str) -> dict[str, BaseException]:
        return recorded_errors(self.rows(checkpoint_id))


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
