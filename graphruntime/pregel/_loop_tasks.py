"""A step's tasks: which still run, the config each one runs with, what they recorded.

:class:`LoopTasks` is the layer of :class:`~graphruntime.pregel._loop.PregelLoop` an
executor reads a step through: :meth:`LoopTasks.task_config` (the config a task's node
sees: namespace, scratchpad, write and read callbacks, runtime), the outcomes saved for
a task (:meth:`LoopTasks.recorded_interrupts`, :meth:`LoopTasks.recorded_failure`) and
the run's output.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CALL,
    CONFIG_KEY_CHECKPOINT_MAP,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_NODE_ERROR,
    CONFIG_KEY_READ,
    CONFIG_KEY_READ_STATE,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SEND,
    CONFIG_KEY_TASK_ID,
    CONTROL_WRITES,
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    PREVIOUS,
    RESUME,
)
from graphruntime._internal._scratchpad import Scratchpad
from graphruntime._internal._typing import MISSING
from graphruntime.checkpoint.base import copy_checkpoint
from graphruntime.errors import GraphInterrupt
from graphruntime.pregel._algo import (
    PreparedTask,
    apply_writes,
    local_read,
    make_scratchpad,
    prepare_next_tasks,
    task_finished,
)
from graphruntime.pregel._io import output_values
from graphruntime.pregel._loop_start import LoopStart
from graphruntime.pregel._resume import task_interrupts, writes_by_task
from graphruntime.pregel._runtime import task_runtime
from graphruntime.pregel._task_config import RunConfig
from graphruntime.types import Interrupt


class LoopTasks(LoopStart):
    """A step's tasks and what they recorded (a layer of ``PregelLoop``)."""

    if TYPE_CHECKING:

        def call_callback(
            self, caller: PreparedTask, scratchpad: Scratchpad
        ) -> Callable[..., Any]: ...  # see _calls.LoopCalls

    def _next_tasks(self) -> dict[str, PreparedTask]:
        return prepare_next_tasks(
            self.checkpoint,
            self.channels,
            self._step_context(),
            updated_channels=self.updated_channels,
        )

    def _reattach_finished(self, tasks: Collection[PreparedTask]) -> list[PreparedTask]:
        """Give finished tasks their saved output writes back; returns those tasks."""
        by_task = writes_by_task(self.pending_writes)  # one pass: O(N) for N tasks
        reattached = []
        for task in tasks:
            writes = by_task.get(task.id, [])
            if writes and task_finished(writes):
                task.writes.extend(w for w in writes if w[0] not in CONTROL_WRITES)
                reattached.append(task)
                self.delta.handed_back(task.id)
        return reattached

    reattach_finished = _reattach_finished

    def runnable_tasks(self) -> list[PreparedTask]:
        """The step's tasks that still have to run, in task order."""
        runnable = []
        for t in self.tasks.values():
            if not t.writes:
                runnable.append(t)
        return runnable

    def recorded_writes(self, task_id: str) -> list[tuple[str, Any]]:
        """What was saved for a task of this step (outputs and control writes)."""
        return writes_by_task(self.pending_writes, {task_id: None}).get(task_id, [])

    def recorded_interrupts(self, task_id: str) -> list[Interrupt]:
        """The interrupts a task of this step saved, if it paused."""
        return task_interrupts(self.recorded_writes(task_id))

    def waiting_interrupts(self, task_id: str) -> list[Interrupt]:
        """The interrupts a task of this step waits on, as ``get_state`` shows them: those
        it saved, unless it finished (a task whose answer failed still waits)."""
        writes = self.recorded_writes(task_id)
        if task_finished(writes):
            return []
        return [i for c, v in writes if c == INTERRUPT for i in v]

    def recorded_failure(self, task_id: str) -> BaseException | None:
        """How a task of this step that did not finish ended: its error, or its interrupt.

        For an executor that ran a ``@task`` call earlier in the same run (a job, in
        another process): the caller, running again, gets this outcome from the call's
        future, as it would have in one process, instead of running it again.
        """
        writes = self.recorded_writes(task_id)
        error = next((v for c, v in writes if c == ERROR), None)
        if error is not None:
            return error if isinstance(error, BaseException) else Exception(error)
        interrupts = task_interrupts(writes)
        return GraphInterrupt(tuple(interrupts)) if interrupts else None

    def kept_error(self, task_id: str) -> BaseException | None:
        """The error of a failed task of this step as its executor kept it (typed), if
        it kept one (see :attr:`RunOptions.task_errors`); asked once per step."""
        source = self.options.task_errors
        if source is None:
            return None
        checkpoint_id = self.checkpoint["id"]
        kept = self._kept_errors
        if kept is None or kept[0] != checkpoint_id:
            kept = self._kept_errors = (checkpoint_id, source(checkpoint_id))
        return kept[1].get(task_id)

    def task_config(self, task: PreparedTask) -> RunnableConfig:
        """The config a task's node sees: its namespace, scratchpad and write callbacks."""
        base = self._run_config()
        checkpoint_id = self.checkpoint["id"]
        scratchpad = make_scratchpad(
            self.pending_writes,
            task.id,
            task.checkpoint_ns,
            resume_map=self.resume_map,
            parent=self.parent_scratchpad,
            step=self.step,
            stop=self.stop,
            null_resume=self._null_resume(task.id),
        )
        channels = self.channels
        managed = self._step_context().managed_values if self.graph.managed else None

        def read(select: Sequence[str] | str, fresh: bool = False) -> Any:
            values = local_read(channels, task.writes, select, fresh=fresh)
            if managed and isinstance(values, dict) and not isinstance(select, str):
                values.update((k, managed[k]) for k in select if k in managed)
            return values

        configurable = base.configurable.copy()
        configurable[CONFIG_KEY_SEND] = task.writes.extend
        configurable[CONFIG_KEY_READ] = read
        configurable[CONFIG_KEY_READ_STATE] = lambda: local_read(
            channels, task.writes, list(channels), fresh=True
        )
        configurable[CONFIG_KEY_SCRATCHPAD] = scratchpad
        configurable[CONFIG_KEY_CHECKPOINT_NS] = task.checkpoint_ns
        configurable[CONFIG_KEY_TASK_ID] = task.id
        configurable[CONFIG_KEY_CHECKPOINT_MAP] = base.checkpoint_map(checkpoint_id)
        configurable[CONFIG_KEY_CALL] = self.call_callback(task, scratchpad)
        configurable[CONFIG_KEY_RUNTIME] = task_runtime(
            self.runtime,
            task,
            base.writer,
            checkpoint_id=checkpoint_id,
            thread_id=base.thread_id,
            run_id=base.run_id,
            previous=self.checkpoint["channel_values"].get(PREVIOUS),
            first_attempt=time.time(),
        )
        if task.node_error is not None:
            configurable[CONFIG_KEY_NODE_ERROR] = task.node_error
        metadata = base.metadata.copy()
        metadata["langgraph_step"] = self.step
        metadata["langgraph_node"] = task.name
        metadata["langgraph_triggers"] = task.triggers
        metadata["langgraph_path"] = task.path
        metadata["langgraph_checkpoint_ns"] = task.checkpoint_ns
        node = task.node
        if node.metadata:
            metadata.update(node.metadata)
        config: RunnableConfig = base.template.copy()  # type: ignore[assignment]
        config[CONF] = configurable
        config["metadata"] = metadata
        config["tags"] = [*base.tags, *node.tags] if node.tags else base.tags.copy()
        if task.callbacks is not None:  # a @task call: a child of its caller's run
            config["callbacks"] = task.callbacks
        elif base.child_callbacks is not None:
            # the graph's LangChain run (see _callbacks.py): tasks are its children
            config["callbacks"] = base.child_callbacks.get_child(f"graph:step:{self.step}")
        return config

    def _run_config(self) -> RunConfig:
        """What every task config of this run shares (rebuilt when the config changes)."""
        base = self._run_base
        if base is None or not base.matches(self.config, self.resume_map):
            base = RunConfig(
                self.config,
                ns=self.ns,
                resume_map=self.resume_map,
                checkpointer=self.checkpointer,
                sink=self.sink,
                writer=self.custom_writer(),
            )
            self._run_base = base
        return base

    def _null_resume(self, task_id: str) -> Callable[[bool], Any]:
        """How a task execution takes the step's unaddressed resume value.

        The first task of the step to reach an ``interrupt()`` it has no answer for
        takes it (:attr:`resume_taken_by`); any other task then interrupts. The task
        that took it gets it again when it runs again (a caller replayed after its
        calls), but each execution takes it once.
        """
        taken_here = False

        def take(consume: bool) -> Any:
            nonlocal taken_here
            with self._lock:
                write = next(
                    (w for w in self.pending_writes if w[0] == NULL_TASK_ID and w[1] == RESUME),
                    None,
                )
                if write is not None:
                    if taken_here or self.resume_taken_by not in (None, task_id):
                        return None
                    if consume:
                        self.resume_taken_by = task_id
                        taken_here = True
                    return write[2]
            if self.parent_scratchpad is not None:
                return self.parent_scratchpad.get_null_resume(consume)
            return None

        return take

    # --- outputs ------------------------------------------------------------------------

    def output(self) -> Any:
        """The output of the current state: what a ``values`` chunk of it holds."""
        return output_values(self.output_keys, True, self.channels)

    def values_with_pending(self) -> Any:
        """On an interrupted exit: the state with finished siblings' writes applied
        (MISSING when they changed no output key)."""
        if not any(t.writes for t in self.tasks.values()):
            return MISSING
        checkpoint = copy_checkpoint(self.checkpoint)
        channels = {k: c.copy() for k, c in self.channels.items()}
        updated = apply_writes(
            checkpoint,
            channels,
            self.tasks.values(),
            self.get_next_version,
            self.graph.trigger_to_nodes,
        )
        keys = {self.output_keys} if isinstance(self.output_keys, str) else self.output_keys
        if updated.isdisjoint(keys):
            return MISSING
        return output_values(self.output_keys, True, channels)
