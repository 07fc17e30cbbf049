"""The superstep engine.

``_algo`` is the pure algorithm; ``PregelLoop`` drives it against a checkpointer and
``run_task`` executes one task. Both drivers — ``Pregel.stream`` in-process and the
distributed coordinator in ``workers`` — use exactly these pieces.
"""

from __future__ import annotations

from graphruntime._internal._constants import INTERRUPT
from graphruntime.pregel._algo import PreparedTask, task_finished
from graphruntime.pregel._drive import recursion_error
from graphruntime.pregel._loop import PregelLoop, StreamSink, is_resume_map
from graphruntime.pregel._runner import RetryLater, run_task, run_task_attempt
from graphruntime.pregel.main import Pregel

__all__ = (
    "INTERRUPT",
    "Pregel",
    "PregelLoop",
    "PreparedTask",
    "RetryLater",
    "StreamSink",
    "is_resume_map",
    "recursion_error",
    "run_task",
    "run_task_attempt",
    "task_finished",
)
