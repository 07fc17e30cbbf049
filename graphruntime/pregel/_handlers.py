"""What a step does besides running its tasks: error handlers and cached results.

Functions of a run's loop (``PregelLoop`` calls them; they read it through the layers
below it, :class:`~graphruntime.pregel._loop_tasks.LoopTasks`):
a failed node's error handler becomes a task of the same step; a node whose result is
cached for its input takes the cached writes instead of running.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from graphruntime._internal._constants import ERROR, ERROR_SOURCE_NODE
from graphruntime.errors import GraphBubbleUp, NodeError
from graphruntime.pregel._algo import (
    PreparedTask,
    prepare_error_handler_task,
    prepare_task,
    task_path_str,
)
from graphruntime.pregel._cache import cache_key
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._loop_tasks import LoopTasks

__all__ = (
    "HANDLER_MARK",
    "error_handler_task",
    "error_handler_tasks",
    "is_handler_path",
    "match_cached",
    "plan_error_handler",
    "resume_error_handlers",
    "routes_to_handler",
    "succeeded",
)

HANDLER_MARK = "node_error_handler"
"""In a handler task's path: ``(*failed task's path, HANDLER_MARK, False)``."""


def is_handler_path(path: Sequence[Any]) -> bool:
    """Whether ``path`` is an error handler task's (it runs for a failed task)."""
    return HANDLER_MARK in path


def succeeded(results: Sequence[TaskResult]) -> bool:
    """Whether every task of ``results`` succeeded (a loop: this runs on every step)."""
    for result in results:  # noqa: SIM110 - no generator to create
        if result.outcome is not None:
            return False
    return True


def routes_to_handler(task: PreparedTask, outcome: BaseException | None) -> bool:
    """Whether ``outcome`` is a failure that ``task``'s error handler takes over.

    Control flow (interrupts, drains, parent commands) is never handled, and a handler
    never handles its own failure.
    """
    return (
        isinstance(outcome, Exception)
        and not isinstance(outcome, GraphBubbleUp)
        and task.node.error_handler is not None
        and not task.node.is_error_handler
    )


def saved_error(value: Any) -> BaseException | None:
    """A failure as saved with its task: the exception, or the text a saver kept of it."""
    if value is None or isinstance(value, BaseException):
        return value
    return RuntimeError(str(value))


def error_handler_task(
    loop: LoopTasks, failed: PreparedTask, error: BaseException
) -> PreparedTask | None:
    """The task of ``failed``'s error handler in this step (registered with the step)."""
    name = failed.node.error_handler
    if name is None or name not in loop.graph.nodes:
        return None
    task = prepare_error_handler_task(
        failed,
        loop.graph.nodes[name],
        NodeError(node=failed.name, error=error),
        checkpoint_id=loop.checkpoint["id"],
        parent_ns=loop.ns,
        step=loop.step,
    )
    if task.id in loop.tasks:
        return loop.tasks[task.id]
    loop.tasks[task.id] = task
    if loop.pending_writes:
        loop.reattach_finished([task])
    return task


def error_handler_tasks(loop: LoopTasks, results: Sequence[TaskResult]) -> list[PreparedTask]:
    """Handlers the step's failures still need (not among ``results``, not finished)."""
    if succeeded(results):
        return []
    ran = {r.task.id for r in results}
    out = []
    for result in results:
        if not routes_to_handler(result.task, result.outcome):
            continue
        assert result.outcome is not None
        handler = error_handler_task(loop, result.task, result.outcome)
        if handler is not None and handler.id not in ran and not handler.writes:
            out.append(handler)
    return out


def resume_error_handlers(loop: LoopTasks) -> None:
    """Tasks that failed into their error handler in an earlier run do not run again:
    their handler does (unless it finished)."""
    failed: dict[str, BaseException] = {}
    for tid, channel, _ in loop.pending_writes:
        if channel == ERROR_SOURCE_NODE and tid in loop.tasks:
            saved = next((v for t, c, v in loop.pending_writes if t == tid and c == ERROR), None)
            if (error := loop.kept_error(tid) or saved_error(saved)) is not None:
                failed[tid] = error
    for tid, error in failed.items():
        task = loop.tasks[tid]
        if task.writes or task.node.error_handler is None:
            continue
        task.writes[:] = [(ERROR, error), (ERROR_SOURCE_NODE, task.name)]
        error_handler_task(loop, task, error)


def plan_error_handler(loop: LoopTasks, failed_path: Sequence[Any]) -> PreparedTask | None:
    """The handler task of the failed task at ``failed_path`` (a job runs only that one)."""
    failed = prepare_task(loop.checkpoint, loop.channels, loop.step_context(), failed_path)
    if failed is None:
        return None
    error = loop.kept_error(failed.id) or saved_error(
        next((v for c, v in loop.recorded_writes(failed.id) if c == ERROR), None)
    )
    if error is None and loop.checkpointer is not None:
        # a job loads only its own tasks' writes: the failure is the failed task's
        loop.settle_saves()
        saved = loop.checkpointer.get_tuple(loop.checkpoint_config)
        writes = saved.pending_writes if saved is not None else None
        error = saved_error(
            next((v for t, c, v in writes or () if t == failed.id and c == ERROR), None)
        )
    return None if error is None else error_handler_task(loop, failed, error)


def match_cached(loop: LoopTasks, tasks: Collection[PreparedTask]) -> None:
    """Tasks whose node caches its results and whose input was seen before take the
    cached writes instead of running (saved, and streamed as cached)."""
    keyed: dict[tuple[tuple[str, ...], str], PreparedTask] = {}
    for task in tasks:
        if task.writes or task.node_error is not None:
            continue
        policy = task.node.cache_policy or loop.graph.cache_policy
        if policy is None:
            continue
        task.cache_key = cache_key(task, policy)
        keyed[(task.cache_key[0], task.cache_key[1])] = task
    if not keyed:
        return
    for key, writes in loop.graph.cache.get(tuple(keyed)).items():
        task = keyed[key]
        task.writes.extend(writes)
        loop.put_writes(task.id, task.writes, task_path_str(task.path[:3]))
        loop.emit_updates(task, cached=True)
