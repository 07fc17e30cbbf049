"""The step API's side of ``@task`` calls: a task that calls a task while it runs.

:class:`LoopCalls` is a layer of :class:`~graphruntime.pregel._loop.PregelLoop`. A running task's
config holds a ``call`` callback (``CONFIG_KEY_CALL``); a ``@task`` function calls it,
and :meth:`LoopCalls.call`

1. numbers the call (its caller's n-th) and prepares its task, with the id LangGraph
   gives it (:func:`~graphruntime.pregel._algo.prepare_call_task`);
2. hands back the saved result when the call already finished in this step (an earlier
   run that was interrupted, another worker), without running it;
3. otherwise asks the loop's :class:`CallExecutor` to run it.

A distributed task job re-creates a call by its path alone (:meth:`LoopCalls.plan_call`):
it runs the caller again until the caller makes that call, as LangGraph runs an
entrypoint again on resume.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from graphruntime._internal._constants import RESUME
from graphruntime._internal._scratchpad import Scratchpad
from graphruntime.pregel._algo import PreparedTask, is_call_path, prepare_call_task, task_finished
from graphruntime.pregel._call import (
    Call,
    CallSuspended,
    call_outcome,
    done_future,
    failed_future,
    in_async_task,
    task_node,
)
from graphruntime.pregel._handlers import match_cached
from graphruntime.pregel._loop_tasks import LoopTasks
from graphruntime.pregel._retry import arun_task, run_task, run_task_attempt
from graphruntime.pregel._stream import StreamSink
from graphruntime.types import RetryPolicy, TimeoutPolicy


@runtime_checkable
class CallExecutor(Protocol):
    """What runs the ``@task`` calls a task makes while a step runs.

    Without one (``loop.calls`` is None), calls run inline, in the caller's thread.

    ``submit_call(loop, task)`` is called from inside the calling task (its thread, or
    its event loop), with a call task that has no saved result. It returns a future of
    the call's return value: a ``concurrent.futures.Future`` for a caller outside an
    event loop, an awaitable asyncio future for a coroutine caller. Before the future
    resolves, the executor records the call (``loop.record(task, outcome)``), so its
    writes are saved and streamed before the caller sees its result.

    An executor that cannot wait in this process returns a future failed with
    :class:`CallSuspended` (or raises it): the caller stops where it waits, and runs
    again from its first line once the call's result is saved.
    """

    def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any: ...


class _Found(CallSuspended):
    """Raised inside a replayed caller when it makes the call being looked for."""

    def __init__(self, task: PreparedTask) -> None:
        super().__init__(task.path)
        self.task = task


class LoopCalls(LoopTasks):
    """``@task`` calls of a run (a layer of ``PregelLoop``)."""

    calls: CallExecutor | None
    """Runs the ``@task`` calls tasks make; set by the drivers (None: inline)."""

    if TYPE_CHECKING:  # see _loop.PregelLoop

        def plan_task(self, path: Sequence[Any]) -> PreparedTask | None: ...
        def record(self, task: PreparedTask, outcome: BaseException | None) -> None: ...

    def call_callback(self, caller: PreparedTask, scratchpad: Scratchpad) -> Callable[..., Any]:
        """The ``call`` a task's config carries, bound to that task."""

        def call(
            func: Callable[..., Any],
            input: tuple[tuple[Any, ...], Mapping[str, Any]],
            *,
            retry_policy: Sequence[RetryPolicy] | None = None,
            cache_policy: Any = None,
            timeout: TimeoutPolicy | None = None,
            callbacks: Any = None,
            **_ignored: Any,
        ) -> Any:
            args, kwargs = input
            return self.call(
                caller,
                scratchpad.next_call(),
                Call(
                    func,
                    tuple(args),
                    dict(kwargs),
                    tuple(retry_policy or ()),
                    cache_policy,
                    TimeoutPolicy.coerce(timeout),
                    callbacks,
                ),
            )

        return call

    def call(self, caller: PreparedTask, index: int, call: Call) -> Any:
        """The future of ``caller``'s ``index``-th call: its saved result, or a run of it."""
        task = self.accept_call(caller, index, call)
        with self._lock:
            running = self._call_futures.get(task.id)
        if running is None:
            # each call made is shown as a task of the step, a finished one too (its
            # result is not shown again), as LangGraph does
            self._emit_tasks([task])
        with self._lock:
            if task.writes:
                value, error = call_outcome(task)
                return done_future(value, error)
            running = self._call_futures.get(task.id)
            if running is not None and not running.done():
                return running  # the caller was retried while its call still runs
        executor = self.calls if self.calls is not None else _INLINE
        future = executor.submit_call(self, task)
        with self._lock:
            self._call_futures[task.id] = future
        return future

    def accept_call(self, caller: PreparedTask, index: int, call: Call) -> PreparedTask:
        """The call's task, added to the step; with its saved writes if it finished."""
        task = prepare_call_task(
            self.checkpoint, caller, index, task_node(call), (call.args, call.kwargs), self.step
        )
        task.callbacks = call.callbacks
        with self._lock:
            known = self.tasks.get(task.id)
            if known is not None:
                if not known.writes and not self.replaying:
                    # saved since it was submitted (by a job, in another process)
                    self._reattach_finished([known])
                running = self._call_futures.get(task.id)
                if task_finished(known.writes) or (running is not None and not running.done()):
                    return known
            self.tasks[task.id] = task
            if not self.replaying:
                self._reattach_finished([task])
        if not task.writes and task.node.cache_policy is not None and self.graph.cache is not None:
            # a cached call takes its cached result instead of running (saved as its writes)
            match_cached(self, [task])
        return task

    def adopt_resume(self, task_ids: Collection[str]) -> None:
        """Calls of this run that ran in other processes and read its unaddressed
        ``Command(resume=v)``: no other task of the step takes that answer again.

        For an executor that runs a caller again after its calls ran as jobs: a call
        that was answered saved a ``RESUME`` write (the answers its interrupts read).
        """
        if self.resume_taken_by is not None:
            return
        # one pass over the step's writes (not one per call: a round may be large)
        for task_id, channel, _ in self.pending_writes:
            if channel == RESUME and task_id in task_ids:
                self.resume_taken_by = task_id
                return

    def plan_call(self, path: Sequence[Any]) -> PreparedTask | None:
        """Re-create the call at ``path`` by running its callers until they make it.

        For a task job in another process: only the path of a call travels (its
        function and arguments cannot), so the job runs the step's task that started the
        chain of calls, and each caller on the way, until the call is made; nothing of
        that replay is recorded. Calls the replay makes that finished are read from the
        step's pending writes, so a job needs the writes of the whole step (the callers'
        earlier calls), not only its own. Returns None when the replay does not reach
        the call (its callers fail, wait for a call that is not saved, or changed).
        """
        path = _as_tuple(path)
        root = path
        while is_call_path(root):
            root = root[1]
        caller = self.plan_task(root)
        if caller is None or caller.writes:
            return None
        finder = _CallFinder(path)
        # the replay streams nothing: its chunks were streamed when the callers ran
        executor, self.calls = self.calls, finder
        sink, self.sink = self.sink, StreamSink(set(), False)
        try:
            outcome = finder.replay(self, caller)
        finally:
            self.calls, self.sink = executor, sink
        return outcome.task if isinstance(outcome, _Found) else None


class _InlineCalls:
    """The calls of a loop whose executor runs none: each runs when it is made, in the
    caller's thread (a coroutine caller gets an asyncio task), one after another."""

    def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
        if in_async_task():
            return asyncio.ensure_future(arun_call(loop, task))
        outcome = run_task(task, loop.task_config(task), loop.graph.retry_policy)
        loop.record(task, outcome)
        if outcome is not None:
            return failed_future(outcome)
        value, error = call_outcome(task)
        return done_future(value, error)


async def arun_call(loop: LoopCalls, task: PreparedTask) -> Any:
    """Run a call as a coroutine, record it, and return its result (or raise)."""
    try:
        outcome = await arun_task(task, loop.task_config(task), loop.graph.retry_policy)
    except asyncio.CancelledError as cancelled:
        loop.record(task, cancelled)
        raise
    loop.record(task, outcome)
    if outcome is not None:
        raise outcome
    value, error = call_outcome(task)
    if error is not None:
        raise error
    return value


_INLINE = _InlineCalls()


def _as_tuple(path: Sequence[Any]) -> tuple[Any, ...]:
    """A path from a message (lists) as the loop builds it (tuples)."""
    return tuple(_as_tuple(p) if isinstance(p, list | tuple) else p for p in path)


def _leads_to(path: tuple[Any, ...], target: tuple[Any, ...]) -> bool:
    """Whether the call at ``path`` is one of the callers of the call at ``target``."""
    while is_call_path(target):
        target = target[1]
        if target == path:
            return True
    return False


class _CallFinder:
    """The executor of a replay: finds one call, runs the callers that lead to it."""

    def __init__(self, target: tuple[Any, ...]) -> None:
        self.target = target

    def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
        if task.path == self.target:
            raise _Found(task)
        if _leads_to(task.path, self.target):
            outcome = self.replay(loop, task)
            if isinstance(outcome, _Found):
                raise outcome
        return failed_future(CallSuspended(task.path))

    def replay(self, loop: LoopCalls, task: PreparedTask) -> Any:
        """Run ``task`` once, without retries or recording; returns its outcome."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _attempt(loop, task)
        # a coroutine caller: its event loop is busy waiting on this call
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(_attempt, loop, task).result()


def _attempt(loop: LoopCalls, task: PreparedTask) -> Any:
    return run_task_attempt(task, loop.task_config(task), ())
