"""The driver API: how an executor other than ``invoke``/``stream`` runs a graph.

``Pregel.invoke`` and ``stream`` drive a run in this process. An executor that runs a
run's steps elsewhere (the workers: a coordinator job per step, task jobs for a step's
tasks, each maybe in another process) drives the same loop, through this module only:

1. :func:`open_loop` builds a run's loop on the thread's checkpoint (or one the executor
   loaded, e.g. with only some tasks' pending writes), with the run's
   :func:`run_options`; the loop is a :class:`StepLoop`;
2. ``loop.first(input, run_id=...)`` starts the run (idempotent per ``run_id``), or
   ``loop.open_step(input)`` re-opens the step it started at, in another process;
3. :func:`drive` runs it to its end with a :class:`StepExecutor`, which may run a step's
   tasks itself, hand back outcomes others saved (``TaskResult(..., recorded=True)``),
   or raise :class:`StepSuspended` when the step goes on elsewhere; or, in a job that
   runs some tasks of a step: ``loop.plan_task(path)``, one attempt of it
   (:func:`run_task_attempt`, which hands a retry back as :class:`RetryLater`), and
   ``loop.record(task, outcome)``;
4. ``loop.view()`` is a frozen picture of the loop between those calls
   (:class:`StepView`): the step's checkpoint, its tasks, how the run stopped.

The loop never writes to its saver itself: every pending write and checkpoint is a
request (:class:`PutWrites`, :class:`PutCheckpoint`) that :func:`drive` performs at
once, or hands to the run's :class:`SaverIO` (``RunOptions.saver_io``), which may hold
them and store many runs' together (the workers' coordinator does); a job that calls
``record`` itself hands them over with :func:`perform_saves`. The runs a run's nodes
start (subgraphs) send theirs to the same :class:`SaverIO`.

The ``@task`` calls a task makes while it runs go to the executor's ``submit_call``
(:class:`CallExecutor`), which may run them, or fail them with :class:`CallSuspended`
(the caller stops where it waits and runs again once their results are saved).

Nothing else of the loop is part of the API: its state, the saver it writes with and
the algorithm under it stay behind :class:`StepLoop`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any, Protocol

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import INTERRUPT
from graphruntime.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from graphruntime.errors import InvalidArgumentTypeError
from graphruntime.pregel._algo import PreparedTask, is_call_path
from graphruntime.pregel._call import CallSuspended, failed_future
from graphruntime.pregel._callbacks import stream_callbacks as _stream_callbacks
from graphruntime.pregel._driver import StepSuspended
from graphruntime.pregel._driver import drive as _drive
from graphruntime.pregel._driver import perform_saves as _perform_saves
from graphruntime.pregel._handlers import is_handler_path
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import (
    LOAD,
    RunOptions,
    StepView,
    TaskResult,
    _Load,
    task_order,
)
from graphruntime.pregel._node import GraphSpec
from graphruntime.pregel._resume import is_resume_map
from graphruntime.pregel._retry import RetryLater, arun_task_attempt, run_task_attempt, task_timeout
from graphruntime.pregel._run import run_options
from graphruntime.pregel._saves import PutCheckpoint, PutWrites, SaverIO, SaverRequest, perform_now
from graphruntime.pregel._state import end_pending
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.types import Interrupt, RetryPolicy

__all__ = (
    "INTERRUPT",
    "LOAD",
    "CallExecutor",
    "CallSuspended",
    "PreparedTask",
    "PutCheckpoint",
    "PutWrites",
    "RetryLater",
    "RunOptions",
    "SaverIO",
    "SaverRequest",
    "StepExecutor",
    "StepLoop",
    "StepSuspended",
    "StepView",
    "StreamChunk",
    "StreamSink",
    "TaskResult",
    "arun_task_attempt",
    "drive",
    "end_pending",
    "failed_future",
    "is_call_path",
    "is_handler_path",
    "is_resume_map",
    "open_loop",
    "perform_now",
    "perform_saves",
    "run_options",
    "run_task_attempt",
    "stream_callbacks",
    "task_order",
    "task_timeout",
)


class StepLoop(Protocol):
    """A run's loop, as an executor sees it: the step API, nothing of its state.

    Built by :func:`open_loop`; see the module's docstring for the order of the calls.
    """

    def view(self) -> StepView:
        """A frozen picture of the loop now."""
        ...

    def first(self, input: Any, *, run_id: str | None = None) -> None:
        """Start the run: its input, its Command, or its resume (checked here, once).

        A second ``first()`` with the same ``run_id`` (a job delivered twice) only
        re-opens the step, as :meth:`open_step` does."""
        ...

    def open_step(self, input: Any) -> list[tuple[str, Any]]:
        """Re-open the step the run started at (with the run's input); saves nothing."""
        ...

    def plan_task(self, path: Sequence[Any]) -> PreparedTask | None:
        """Only the task at ``path`` of this step (with its saved writes, if it finished);
        None when the step has no such task."""
        ...

    def task_config(self, task: PreparedTask) -> RunnableConfig:
        """The config a task's node runs with."""
        ...

    def record(self, task: PreparedTask, outcome: BaseException | None) -> None:
        """Save a task's outcome (None: its writes) as pending writes, and stream it."""
        ...

    def recorded_interrupts(self, task_id: str) -> list[Interrupt]:
        """The interrupts a task of this step saved, if it paused."""
        ...

    def waiting_interrupts(self, task_id: str) -> list[Interrupt]:
        """The interrupts a task of this step waits on, as ``get_state`` shows them (a
        task whose answer failed still waits)."""
        ...

    def recorded_failure(self, task_id: str) -> BaseException | None:
        """How a task of this step that did not finish ended: its error or interrupt."""
        ...

    def adopt_resume(self, task_ids: Collection[str]) -> None:
        """Calls that ran elsewhere and took the run's unaddressed resume value: no
        other task of the step takes it again."""
        ...

    def output(self) -> Any:
        """The run's output as the current state gives it."""
        ...

    def drain(self) -> list[StreamChunk]:
        """Take the stream chunks the run put so far."""
        ...

    @property
    def sink(self) -> StreamSink:
        """Where the run's stream chunks go (the sink :func:`open_loop` got): an
        executor may watch it (``listener``) to keep chunks while a task runs."""
        ...

    @property
    def retry_policy(self) -> Sequence[RetryPolicy]:
        """The graph's retry policies (a task's own come first)."""
        ...


class StepExecutor(Protocol):
    """Runs a step's tasks; yields each one's result (or None: stream chunks wait).

    It may hand back outcomes others saved (``recorded=True``), or raise
    :class:`StepSuspended` when the step goes on elsewhere.
    """

    def execute(
        self, loop: StepLoop, tasks: Sequence[PreparedTask]
    ) -> Iterator[TaskResult | None]: ...


class CallExecutor(Protocol):
    """Runs the ``@task`` calls a task makes (see the module's docstring).

    Returns a future of the call's result (a ``concurrent.futures.Future``, or an
    asyncio one for a coroutine caller), or one failed with :class:`CallSuspended`.
    """

    def submit_call(self, loop: StepLoop, task: PreparedTask) -> Any: ...


def open_loop(
    graph: GraphSpec,
    config: RunnableConfig,
    *,
    saver: BaseCheckpointSaver | None,
    sink: StreamSink,
    options: RunOptions,
    saved: CheckpointTuple | _Load | None = LOAD,
) -> StepLoop:
    """A run's loop on the thread ``config`` names, not started.

    ``saved``: the checkpoint the executor loaded already (None: the thread has none);
    :data:`LOAD`: the loop reads it from ``saver``.
    """
    return PregelLoop(graph, config, checkpointer=saver, sink=sink, options=options, saved=saved)


def drive(loop: StepLoop, executor: StepExecutor) -> Iterator[StreamChunk]:
    """Run a started loop to its end (or until ``executor`` suspends it), yielding its
    stream chunks. An executor that also implements ``submit_call``
    (:class:`CallExecutor`) runs the ``@task`` calls of its tasks."""
    if not isinstance(loop, PregelLoop):
        raise InvalidArgumentTypeError(
            f"drive() takes a loop open_loop() made, not {type(loop).__name__}"
        )
    return _drive(loop, executor)


def perform_saves(loop: StepLoop) -> None:
    """Hand the saver requests the loop made so far to its ``SaverIO`` (or perform them
    at once): for a job that records tasks itself, without :func:`drive`."""
    if not isinstance(loop, PregelLoop):
        raise InvalidArgumentTypeError(
            f"perform_saves() takes a loop open_loop() made, not {type(loop).__name__}"
        )
    _perform_saves(loop)


def stream_callbacks(loop: StepLoop, *, modes: Collection[str], subgraphs: bool) -> bool:
    """Give the loop's tasks the callback handlers of its ``messages`` and ``tools``
    modes (their chunks go to the loop's sink), with no graph run around them: for a
    process that runs some of a run's tasks, where the graph's run spans processes.
    Returns whether the run streams either mode (False: nothing was changed)."""
    if not isinstance(loop, PregelLoop):
        raise InvalidArgumentTypeError(
            f"stream_callbacks() takes a loop open_loop() made, not {type(loop).__name__}"
        )
    return _stream_callbacks(loop, modes=modes, subgraphs=subgraphs)
