"""The superstep engine and its step API.

``_algo`` is the pure algorithm. :class:`PregelLoop` is the step API every executor
drives: ``first``/``open_step``, ``plan``, ``record``, ``settle``, ``close``. Tasks run
through one retry loop (``run_task``, ``arun_task``, ``run_task_attempt``), and
:func:`steps` is the loop body shared by the in-process drivers (``drive``,
``adrive``) and the workers' coordinator. ``@task`` calls a task makes while it runs
are tasks of the same step: the loop prepares them (``PregelLoop.call``, and
``plan_task`` re-creates one from its path), a :class:`CallExecutor` runs them.

``Pregel`` and ``NodeBuilder`` are LangGraph's low-level graph API.
"""

from __future__ import annotations

from graphruntime._internal._constants import INTERRUPT
from graphruntime.pregel._algo import PreparedTask, is_call_path, task_finished
from graphruntime.pregel._builder import NodeBuilder
from graphruntime.pregel._call import CallSuspended, done_future, failed_future
from graphruntime.pregel._callbacks import stream_callbacks
from graphruntime.pregel._calls import CallExecutor
from graphruntime.pregel._driver import (
    AsyncioExecutor,
    AsyncStepExecutor,
    StepExecutor,
    StepSuspended,
    ThreadExecutor,
    adrive,
    drive,
    paused,
    recursion_error,
    steps,
)
from graphruntime.pregel._handlers import HANDLER_MARK
from graphruntime.pregel._loop import LOAD, PregelLoop, RunOptions, TaskResult, task_order
from graphruntime.pregel._node import GraphSpec, NodeSpec
from graphruntime.pregel._resume import is_resume_map, pending_interrupts
from graphruntime.pregel._retry import (
    RetryLater,
    arun_task,
    arun_task_attempt,
    run_task,
    run_task_attempt,
    task_timeout,
)
from graphruntime.pregel._state import end_pending
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.pregel.main import Pregel

__all__ = (
    "HANDLER_MARK",
    "INTERRUPT",
    "LOAD",
    "AsyncStepExecutor",
    "AsyncioExecutor",
    "CallExecutor",
    "CallSuspended",
    "GraphSpec",
    "NodeBuilder",
    "NodeSpec",
    "Pregel",
    "PregelLoop",
    "PreparedTask",
    "RetryLater",
    "RunOptions",
    "StepExecutor",
    "StepSuspended",
    "StreamChunk",
    "StreamSink",
    "TaskResult",
    "ThreadExecutor",
    "adrive",
    "arun_task",
    "arun_task_attempt",
    "done_future",
    "drive",
    "end_pending",
    "failed_future",
    "is_call_path",
    "is_resume_map",
    "paused",
    "pending_interrupts",
    "recursion_error",
    "run_task",
    "run_task_attempt",
    "steps",
    "stream_callbacks",
    "task_finished",
    "task_order",
    "task_timeout",
)
