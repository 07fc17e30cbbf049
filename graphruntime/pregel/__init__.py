"""The superstep engine.

``_algo`` is the pure algorithm; ``PregelLoop`` drives it against a checkpointer and
``run_task`` executes one task. Both drivers — ``Pregel.stream`` in-process and the
distributed coordinator in ``workers`` — use exactly these pieces.
"""

from __future__ import annotations

from graphruntime.pregel._algo import PreparedTask, task_finished
from graphruntime.pregel._loop import PregelLoop, StreamSink
from graphruntime.pregel._runner import run_task
from graphruntime.pregel.main import Pregel

__all__ = ("Pregel", "PregelLoop", "PreparedTask", "StreamSink", "run_task", "task_finished")
