"""What the coordinator, the task jobs, the sweeper and the dead letters call: one line each.

Each hook feeds the metrics, the logs' bound ids and the spans that are turned on, and
does (almost) nothing when none is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from graphruntime.errors import GraphBubbleUp
from graphruntime.pregel.driver import (
    RetryLater,
    StepSuspended,
    arun_task_attempt,
    run_task_attempt,
    task_timeout,
)
from workers.observability import _logs, _metrics, _tracing

if TYPE_CHECKING:
    from graphruntime.config import RunnableConfig
    from graphruntime.pregel.driver import (
        CallExecutor,
        PreparedTask,
        StepExecutor,
        StepLoop,
        StepView,
        TaskResult,
    )
    from graphruntime.types import RetryPolicy
    from workers.store import Run


def _active() -> bool:
    return _metrics.metrics_enabled() or _logs.json_logs_enabled() or _tracing.tracing_enabled()


@contextmanager
def job(kind: str, run_id: str | None, job_id: str | None) -> Iterator[None]:
    """A Celery job (``coordinate`` or ``execute``) of ``run_id``: bound ids and a span."""
    with (
        _logs.bound(run_id=run_id, job_id=job_id),
        _tracing.span(f"graphruntime.job.{kind}", {"run_id": run_id, "job_id": job_id}),
    ):
        yield


@contextmanager
def run(run: Run) -> Iterator[None]:
    """The coordinator advancing one run: bound ids and the run's span."""
    ids = {"run_id": run.run_id, "thread_id": run.thread_id, "graph": run.graph}
    with _logs.bound(**ids), _tracing.span("graphruntime.run", {**ids, "kind": run.kind}):
        yield


def run_ended(graph: str, status: str) -> None:
    """A worker ended a run with ``status``."""
    _metrics.record_run_ended(graph, status)
    _tracing.annotate(status=status)


def run_ending(status: str) -> None:
    """In the run's span: the run ends with ``status`` once its batch commits
    (:func:`run_end_committed` counts it then, with the status it got)."""
    _tracing.annotate(status=status)


def run_end_committed(graph: str, status: str) -> None:
    """A coordinator's batch committed a run's end with ``status``."""
    _metrics.record_run_ended(graph, status)


def log_fields(run: Run, task: PreparedTask) -> dict[str, Any]:
    """``extra=`` for a log line about one task (JSON lines carry these fields)."""
    return {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "graph": run.graph,
        "node": task.name,
        "task_id": task.id,
    }


def one_attempt(
    task: PreparedTask,
    config: RunnableConfig,
    retry_policy: Sequence[RetryPolicy] = (),
    *,
    attempts_done: int = 0,
    first_attempt_time: float | None = None,
) -> BaseException | RetryLater | None:
    """:func:`graphruntime.pregel.driver.run_task_attempt`; a task with a ``TimeoutPolicy`` runs
    on an event loop of its own, as only the async driver can cancel it past its limits
    (the node is async: a timeout on a sync node is refused when the graph is built)."""
    if task_timeout(task) is None:
        return run_task_attempt(
            task,
            config,
            retry_policy,
            attempts_done=attempts_done,
            first_attempt_time=first_attempt_time,
        )
    timed = arun_task_attempt(
        task,
        config,
        retry_policy,
        attempts_done=attempts_done,
        first_attempt_time=first_attempt_time,
    )
    return asyncio.run(timed)


def attempt(
    run: Run,
    task: PreparedTask,
    config: RunnableConfig,
    retry_policy: Sequence[RetryPolicy] = (),
    *,
    attempts_done: int = 0,
    first_attempt_time: float | None = None,
) -> BaseException | RetryLater | None:
    """One attempt of ``task`` (:func:`one_attempt`), timed, counted and traced."""
    if not _active():
        return one_attempt(
            task,
            config,
            retry_policy,
            attempts_done=attempts_done,
            first_attempt_time=first_attempt_time,
        )
    started = time.perf_counter()
    with (
        _logs.bound(**log_fields(run, task)),
        _tracing.span(
            "graphruntime.task",
            {**log_fields(run, task), "attempt": attempts_done + 1},
        ) as span,
    ):
        outcome = one_attempt(
            task,
            config,
            retry_policy,
            attempts_done=attempts_done,
            first_attempt_time=first_attempt_time,
        )
        failure = outcome.error if isinstance(outcome, RetryLater) else outcome
        if failure is not None and not isinstance(failure, GraphBubbleUp):
            _tracing.mark_failed(span, failure)
    _metrics.record_task(
        run.graph,
        task.name,
        time.perf_counter() - started,
        error=None if failure is None or isinstance(failure, GraphBubbleUp) else _name(failure),
        retry=isinstance(outcome, RetryLater),
    )
    return outcome


def _name(error: BaseException) -> str:
    return type(error).__name__


def steps(executor: StepExecutor, run: Run) -> StepExecutor:
    """``executor``, with a span per step and each step counted and timed once its outcomes
    are in (itself when nothing is observed)."""
    return _ObservedSteps(executor, run) if _active() else executor


class _ObservedSteps:
    def __init__(self, inner: StepExecutor, run: Run) -> None:
        self.inner = inner
        self.run = run

    def execute(self, loop: StepLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult | None]:
        run = self.run
        view = loop.view()
        attributes = {
            "run_id": run.run_id,
            "thread_id": run.thread_id,
            "graph": run.graph,
            "step": view.step,
            "checkpoint_id": view.checkpoint_id,
            "tasks": len(tasks),
        }
        inline = False
        waiting: StepSuspended | None = None
        with _tracing.span("graphruntime.step", attributes):
            try:
                for result in self.inner.execute(loop, tasks):
                    if result is not None:  # None: the driver drains the stream sink
                        inline = inline or not result.recorded
                    yield result
            except StepSuspended as suspended:  # waiting on its task jobs: not an error
                waiting = suspended
            _tracing.annotate(
                suspended=waiting is not None,
                kind=None if waiting is not None else "inline" if inline else "distributed",
            )
        if waiting is not None:
            raise waiting
        # Done: run here, or settled from what its task jobs saved (the tasks that saved
        # writes are not even handed to the executor then).
        kind = "inline" if inline else "distributed"
        _metrics.record_step(run.graph, kind, _since(step_start(view, run)))

    def submit_call(self, loop: StepLoop, task: PreparedTask) -> Any:
        """The inner executor's ``@task`` calls (it runs them, see ``CallExecutor``)."""
        return cast("CallExecutor", self.inner).submit_call(loop, task)


def step_start(view: StepView, run: Run) -> datetime:
    """When a step began: its checkpoint was saved, or its run was created if that is later
    (a resumed run re-opens a step saved long before)."""
    saved = datetime.fromisoformat(view.checkpoint_ts)
    created = run.created_at
    if saved.tzinfo is None:
        saved = saved.replace(tzinfo=UTC)
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return max(saved, created)


def _since(start: datetime) -> float:
    return max(0.0, (datetime.now(UTC) - start).total_seconds())


def swept(found: tuple[int, int, int]) -> None:
    """What one sweep re-sent: (tasks, runs, deadlines)."""
    _metrics.record_resends(*found)


def dead_letters(*, pushed: int = 0, dropped: int = 0) -> None:
    _metrics.record_dead_letters(pushed, dropped)
