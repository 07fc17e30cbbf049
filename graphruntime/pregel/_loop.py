"""The step API: one run of one graph on one thread namespace, a superstep at a time.

Every executor drives a run through the same calls on :class:`PregelLoop`:

1. build it from the thread's latest checkpoint (or one the executor loaded),
2. :meth:`~PregelLoop.first` applies the run's input or command, or
   :meth:`~PregelLoop.open_step` re-opens the step a run started at in another process,
3. :meth:`~PregelLoop.plan` prepares the step's tasks,
4. each task runs (:mod:`graphruntime.pregel._retry`) and :meth:`~PregelLoop.record`
   saves its outcome as pending writes,
5. :meth:`~PregelLoop.settle` turns the step's outcomes into an error or an
   interrupt, and :meth:`~PregelLoop.close` applies the writes and saves the
   next checkpoint.

In-process, :mod:`graphruntime.pregel._driver` makes these calls; on a cluster the
workers make the same ones through :mod:`graphruntime.pregel.driver`. The algorithm
(which tasks run, how writes combine) is :mod:`graphruntime.pregel._algo`. The class
is built in layers, one module each (see :mod:`graphruntime.pregel._loop_state`); this
module is the top one: planning, recording and closing a step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_RESUMING,
    CONTROL_WRITES,
    ERROR,
    ERROR_SOURCE_NODE,
    INTERRUPT,
    NO_WRITES,
    RESUME,
)
from graphruntime.errors import GraphBubbleUp, GraphInterrupt
from graphruntime.pregel._algo import (
    PreparedTask,
    apply_writes,
    is_call_path,
    prepare_task,
    should_interrupt,
)
from graphruntime.pregel._cache import cacheable
from graphruntime.pregel._call import CallSuspended, is_call
from graphruntime.pregel._calls import LoopCalls
from graphruntime.pregel._handlers import (
    HANDLER_MARK,
    error_handler_task,
    error_handler_tasks,
    match_cached,
    plan_error_handler,
    resume_error_handlers,
    routes_to_handler,
    succeeded,
)
from graphruntime.pregel._io import output_values
from graphruntime.pregel._loop_state import TaskResult, task_order
from graphruntime.pregel._message_ids import ensure_message_ids


def _dedupe_resume(writes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    last = None
    for i, (c, _) in enumerate(writes):
        if c == RESUME:
            last = i
    if last is None:
        return list(writes)
    return [w for i, w in enumerate(writes) if w[0] != RESUME or i == last]


class PregelLoop(LoopCalls):
    """State of one run of one graph (root or nested) on one thread namespace, and the
    step API that advances it (see the module's docstring)."""

    # --- steps --------------------------------------------------------------------------

    def plan(self) -> bool:
        """Prepare the next step's tasks; False when the run is over.

        Over means: nothing left to run (``status`` "done") or the recursion limit
        reached ("out_of_steps"). Tasks that already finished in an earlier run get
        their saved writes back (and stream them as cached); a static breakpoint
        before the step raises :class:`GraphInterrupt`.
        """
        if self.step > self.stop:
            self.status = "out_of_steps"
            if self.checkpointer is not None and self.streams("checkpoints"):
                self._emit_checkpoint(self._next_tasks().values())
            return False
        self._call_futures = {}
        self.tasks = self._next_tasks()
        if self.checkpointer is not None:  # (the guards inline: these run every step)
            self._emit_checkpoint(self.tasks.values())
        if not self.tasks:
            self.status = "done"
            return False
        cached = []
        if self.pending_writes and not self.replaying:
            cached = self._reattach_finished(self.tasks.values())
            resume_error_handlers(self)
        if self.graph.cache is not None:
            match_cached(self, self.tasks.values())
        if self.options.interrupt_before and should_interrupt(
            self.checkpoint, self.options.interrupt_before, self.tasks.values()
        ):
            self.status = "interrupt_before"
            raise GraphInterrupt()
        # after the breakpoint check: a resume passes the next step's breakpoints, so a
        # drain in front of one must stop there, or the resumed run would skip it
        control = self.runtime.control
        if control is not None and control.drain_requested:
            self.status = "draining"
            return False
        if "tasks" in self.sink.modes or "debug" in self.sink.modes:
            self._emit_tasks(self.tasks.values())
        for task in cached:
            self._emit_updates(task, cached=True)
        return True

    # --- cached results and error handlers (see _handlers.py) ---------------------------

    def routes_to_handler(self, task: PreparedTask, outcome: BaseException | None) -> bool:
        """Whether ``outcome`` is a failure that ``task``'s error handler takes over."""
        return routes_to_handler(task, outcome)

    def error_handler_task(self, failed: PreparedTask, error: BaseException) -> PreparedTask | None:
        """The task of ``failed``'s error handler in this step, registered with the step.

        Its id follows from the failed task's, so every process that asks gets the
        same task; a handler that already finished gets its saved writes back.
        """
        return error_handler_task(self, failed, error)

    def error_handler_tasks(self, results: Sequence[TaskResult]) -> list[PreparedTask]:
        """Handlers still to run for the step's failures (an executor that could not
        start them while the step ran gets them here, as one more batch)."""
        if succeeded(results):  # checked here too: one call less on every step
            return []
        return error_handler_tasks(self, results)

    def plan_task(self, path: Sequence[Any]) -> PreparedTask | None:
        """Prepare only the task at ``path`` of this step (with its saved writes, if finished).

        For an executor that runs some of a step's tasks: a fan-out of N tasks then
        costs O(N) across its executors, not O(N²). A ``@task`` call's path re-creates
        the call by replaying its callers (:meth:`plan_call`).
        """
        if is_call_path(path):
            return self.plan_call(path)
        if HANDLER_MARK in path:  # (*failed task's path, "node_error_handler", False)
            return plan_error_handler(self, path[: list(path).index(HANDLER_MARK)])
        task = prepare_task(self.checkpoint, self.channels, self._step_context(), path)
        if task is None:
            return None
        self.tasks[task.id] = task
        self._reattach_finished([task])
        return task

    def record(self, task: PreparedTask, outcome: BaseException | None) -> None:
        """Save a task's outcome as pending writes and stream it."""
        if outcome is not None and isinstance(outcome, CallSuspended):
            return  # it runs again once its calls' results are saved
        with self._lock:
            self._record(task, outcome)

    def _record(self, task: PreparedTask, outcome: BaseException | None) -> None:
        # the path goes to the saver only: no saver, no sort key to build
        path = task_order(task) if self.checkpointer is not None else ""
        if outcome is None:
            writes = _dedupe_resume(task.writes)
            if self.delta.enabled:
                ensure_message_ids(self.graph.channel_specs, writes)
            for c, _ in writes:
                if c not in CONTROL_WRITES:
                    break
            else:  # only control writes (or none): mark the task as done
                writes.append((NO_WRITES, None))
            task.writes[:] = writes
            self.put_writes(task.id, writes, path)
            if "updates" in self.sink.modes:
                self._emit_updates(task)
            if task.cache_key is not None and cacheable(writes):
                namespace, key, ttl = task.cache_key
                self.graph.cache.set({(namespace, key): (list(writes), ttl)})
        elif isinstance(outcome, GraphInterrupt):
            resume = [w for w in _dedupe_resume(task.writes) if w[0] == RESUME]
            writes = [(INTERRUPT, tuple(outcome.interrupts)), *resume]
            self.put_writes(task.id, writes, path)
            # a call's interrupt reaches its caller, who shows it
            if outcome.interrupts and not is_call(task):
                self.emit("updates", {INTERRUPT: tuple(outcome.interrupts)})
                values = output_values(self.output_keys, True, self.channels)
                if isinstance(values, dict):
                    self.emit("values", {**values, INTERRUPT: tuple(outcome.interrupts)})
                else:  # a single output key: the chunk shows only the interrupts
                    self.emit("values", {INTERRUPT: tuple(outcome.interrupts)})
        elif isinstance(outcome, GraphBubbleUp):
            return  # a drain or a Command for a parent graph: nothing of this task is saved
        elif routes_to_handler(task, outcome):
            # the handler takes the error over: the task's own writes are dropped, and
            # the marker tells a resumed run to run the handler, not the task again
            task.writes[:] = [(ERROR, outcome), (ERROR_SOURCE_NODE, task.name)]
            writes = task.writes
            self.put_writes(task.id, writes, path)
        else:  # a failure, or a cancelled call
            writes = [*task.writes, (ERROR, outcome)]
            self.put_writes(task.id, writes, path)
        if "tasks" in self.sink.modes or "debug" in self.sink.modes:
            self._emit_task_result(task, writes)

    def settle(self, results: Sequence[TaskResult]) -> None:
        """After every task of the step ended: raise its error, or its interrupts.

        Results are taken in task order, whatever order they finished in, so the first
        error raised and the interrupts listed are the same on every executor.
        """
        if succeeded(results):
            return
        ordered = sorted(results, key=lambda r: task_order(r.task))
        for result in ordered:
            if (
                result.outcome is not None
                and not isinstance(result.outcome, GraphBubbleUp)
                and not routes_to_handler(result.task, result.outcome)
            ):
                raise result.outcome
        for result in ordered:
            if isinstance(result.outcome, GraphBubbleUp) and not isinstance(
                result.outcome, GraphInterrupt
            ):
                raise result.outcome  # a ParentCommand travelling up, a drained subgraph
        paused = [r.outcome for r in ordered if isinstance(r.outcome, GraphInterrupt)]
        if paused:
            self.status = "interrupted"
            self.interrupts = [i for exc in paused for i in exc.interrupts]
            raise GraphInterrupt(tuple(self.interrupts))

    def close(self) -> None:
        """Apply the step's writes, save the next checkpoint, check ``interrupt_after``."""
        tasks = list(self.tasks.values())
        if self.delta.enabled:
            for task in tasks:
                self.delta.applied(task.id, task.writes)
        if (log := self._exit_log) is not None:
            # writes handed back to a resumed step's finished tasks are on the anchor
            log.record_step(
                self.step,
                (
                    (t.id, task_order(t), t.writes)
                    for t in tasks
                    if not (t.id in log.loaded and self.delta.was_handed_back(t.id))
                ),
            )
        self.updated_channels = apply_writes(
            self.checkpoint,
            self.channels,
            tasks,
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        step_writes = tasks[0].writes if len(tasks) == 1 else [w for t in tasks for w in t.writes]
        self._emit_values(step_writes)
        self.pending_writes = []
        self._put_checkpoint("loop")
        self.replaying = False
        if self.options.interrupt_after and should_interrupt(
            self.checkpoint, self.options.interrupt_after, tasks
        ):
            self.status = "interrupt_after"
            # the step that would stream this checkpoint never runs
            if self.checkpointer is not None and self.streams("checkpoints"):
                self._emit_checkpoint(self._next_tasks().values())
            raise GraphInterrupt()
        # only the step a run resumed is a resume; later steps (and their subgraphs) are not
        if CONFIG_KEY_RESUMING in self.config[CONF]:
            conf = dict(self.config[CONF])
            del conf[CONFIG_KEY_RESUMING]
            self.config = {**self.config, CONF: conf}
