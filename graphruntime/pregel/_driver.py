"""Driving a run: the superstep loop, written once, and the executors that run its tasks.

:func:`steps` is the loop body every executor shares: plan a step, hand its runnable
tasks to an executor, settle the results, close the step. It is a generator that
yields each step's tasks and receives their results, so the same body serves a
synchronous driver (:func:`drive`), an asynchronous one (:func:`adrive`) and the
workers' coordinator, whose executor may run a task inline, or dispatch the step's
tasks as jobs and suspend the run (it raises out of the driver, see
:class:`StepSuspended`) until the last of them finishes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence
from typing import Protocol, runtime_checkable

from graphruntime._internal._config import RunnableConfig
from graphruntime.errors import (
    ErrorCode,
    GraphBubbleUp,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    create_error_message,
)
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._loop import PregelLoop, TaskResult
from graphruntime.pregel._retry import arun_task, run_task
from graphruntime.pregel._stream import StreamChunk
from graphruntime.types import RetryPolicy


class StepSuspended(Exception):
    """Raised by an executor that handed the step's tasks to someone else.

    The run is not over: whoever completes the step continues it later from the
    saved checkpoint and pending writes.
    """


class StepExecutor(Protocol):
    """Runs a step's tasks and yields each one's result as it finishes."""

    def execute(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]: ...


class AsyncStepExecutor(Protocol):
    """Async twin of :class:`StepExecutor`."""

    def aexecute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> AsyncIterator[TaskResult]: ...


@runtime_checkable
class Submitting(Protocol):
    """An executor that can add a task to the step it is running.

    A task submitted while ``execute``/``aexecute`` is under way is run alongside the
    others and its result comes out of the same iterator. The drivers use it to start a
    failed node's error handler at once, while its siblings still run; an executor
    without it runs the handlers as one more batch once the step's tasks are done.
    """

    def submit(self, loop: PregelLoop, task: PreparedTask) -> None: ...


def recursion_error(loop: PregelLoop) -> GraphRecursionError:
    return GraphRecursionError(
        create_error_message(
            message=f"Recursion limit of {loop.recursion_limit} reached without hitting a "
            "stop condition. You can increase the limit by setting the `recursion_limit` "
            "config key.",
            error_code=ErrorCode.GRAPH_RECURSION_LIMIT,
        )
    )


def steps(loop: PregelLoop) -> Generator[list[PreparedTask], list[TaskResult], None]:
    """The superstep loop of a started run (after ``first()`` or ``open_step()``).

    Yields the tasks each step still has to run; send back their results. Raises
    GraphInterrupt when the run pauses and GraphRecursionError past the limit.
    """
    while loop.plan():
        results = yield loop.runnable_tasks()
        while handlers := loop.error_handler_tasks(results):
            results = [*results, *(yield handlers)]
        loop.settle(results)
        loop.close()
    if loop.status == "out_of_steps":
        raise recursion_error(loop)
    if loop.status == "draining":
        raise GraphDrained(loop.runtime.drain_reason or "shutdown")


def _fails_step(loop: PregelLoop, result: TaskResult) -> bool:
    """A failure no error handler takes over: the step (and the run) ends with it."""
    outcome = result.outcome
    return (
        isinstance(outcome, Exception)
        and not isinstance(outcome, GraphBubbleUp)
        and not loop.routes_to_handler(result.task, outcome)
    )


def _submit_handler(loop: PregelLoop, executor: object, result: TaskResult) -> None:
    """Start the error handler of a task that just failed, if the executor can."""
    if result.recorded or result.outcome is None:
        return
    if loop.routes_to_handler(result.task, result.outcome) and isinstance(executor, Submitting):
        handler = loop.error_handler_task(result.task, result.outcome)
        if handler is not None and not handler.writes:
            executor.submit(loop, handler)


def paused(loop: PregelLoop) -> None:
    """The run stopped at an interrupt: a subgraph passes it up, a root streams its state."""
    if loop.is_nested:
        raise GraphInterrupt(tuple(loop.interrupts))
    if loop.status == "interrupted":
        loop.emit("values", loop.values_with_pending())


def drive(loop: PregelLoop, executor: StepExecutor) -> Iterator[StreamChunk]:
    """Run a started loop to its end in this thread, yielding stream chunks as they appear."""
    sink = loop.sink
    body = steps(loop)
    try:
        yield from sink.drain()
        tasks = next(body)
        while True:
            yield from sink.drain()
            results: list[TaskResult] = []
            running = executor.execute(loop, tasks)
            try:
                for result in running:
                    if not result.recorded:
                        loop.record(result.task, result.outcome)
                    results.append(result)
                    _submit_handler(loop, executor, result)
                    yield from sink.drain()
                    if _fails_step(loop, result):
                        break  # the step has failed: its other tasks' results do not matter
            finally:
                close = getattr(running, "close", None)
                if close is not None:
                    close()
            tasks = body.send(results)
    except StopIteration:
        pass
    except GraphInterrupt:
        paused(loop)
    yield from sink.drain()


async def adrive(
    loop: PregelLoop, executor: AsyncStepExecutor
) -> AsyncGenerator[StreamChunk, None]:
    """Async twin of :func:`drive` (same body: :func:`steps`)."""
    sink = loop.sink
    body = steps(loop)
    try:
        for chunk in sink.drain():
            yield chunk
        tasks = next(body)
        while True:
            for chunk in sink.drain():
                yield chunk
            results: list[TaskResult] = []
            running = executor.aexecute(loop, tasks)
            try:
                async for result in running:
                    if not result.recorded:
                        loop.record(result.task, result.outcome)
                    results.append(result)
                    _submit_handler(loop, executor, result)
                    for chunk in sink.drain():
                        yield chunk
                    if _fails_step(loop, result):
                        break  # the step has failed: its other tasks are cancelled
            finally:
                # a closed stream or a failed step stops the tasks still running
                aclose = getattr(running, "aclose", None)
                if aclose is not None:
                    await aclose()
            tasks = body.send(results)
    except StopIteration:
        pass
    except GraphInterrupt:
        paused(loop)
    for chunk in sink.drain():
        yield chunk


def _step_timed_out(step_timeout: float | None) -> TimeoutError:
    return TimeoutError(
        f"The step did not finish within the graph's step_timeout ({step_timeout}s)"
    )


class ThreadExecutor:
    """Runs a step's tasks in this thread (one task) or on up to N threads.

    The threads pull from one queue, one future per thread rather than per task: a
    fan-out of thousands of Sends pays no per-task submit/wait overhead. Results come
    back in completion order; the loop settles them in task order.
    """

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.max_workers = max_concurrency or 32
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        # each item carries the queue of the step it belongs to: a thread still running a
        # task of a step that ended early cannot hand its result to the next step
        self._pending: deque[
            tuple[
                PreparedTask, RunnableConfig, Sequence[RetryPolicy], queue.SimpleQueue[TaskResult]
            ]
        ] = deque()
        self._results: queue.SimpleQueue[TaskResult] = queue.SimpleQueue()
        self._inline: deque[PreparedTask] | None = None
        self._outstanding = 0

    def execute(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]:
        policy = loop.graph.retry_policy
        step_timeout = loop.graph.step_timeout
        if len(tasks) == 1 and step_timeout is None:
            # one task runs in this thread, and so do the tasks submitted meanwhile
            inline: deque[PreparedTask] = deque(tasks)
            self._inline = inline
            try:
                while inline:
                    task = inline.popleft()
                    yield TaskResult(task, run_task(task, loop.task_config(task), policy))
            finally:
                self._inline = None
            return
        if not tasks:
            return
        self._outstanding = len(tasks)
        results = self._results = queue.SimpleQueue()
        self._pending.extend((t, loop.task_config(t), policy, results) for t in tasks)
        for _ in range(min(self.max_workers, len(tasks))):
            self._start_worker()
        deadline = time.monotonic() + step_timeout if step_timeout is not None else None
        try:
            while self._outstanding:
                try:
                    result = results.get(
                        timeout=None if deadline is None else max(0.0, deadline - time.monotonic())
                    )
                except queue.Empty:
                    raise _step_timed_out(step_timeout) from None
                self._outstanding -= 1
                yield result
        finally:
            if self._outstanding:
                # the step ended early (failed, timed out, stream closed): start nothing
                # more, and drop what still comes back from threads already running
                self._pending.clear()
                self._outstanding = 0

    def submit(self, loop: PregelLoop, task: PreparedTask) -> None:
        """Run ``task`` too, in the step being executed (called between two results)."""
        if self._inline is not None:
            self._inline.append(task)
            return
        self._outstanding += 1
        self._pending.append((task, loop.task_config(task), loop.graph.retry_policy, self._results))
        self._start_worker()

    def _start_worker(self) -> None:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.max_workers)
        self._pool.submit(self._work)

    def _work(self) -> None:
        while True:
            try:
                task, config, policy, results = self._pending.popleft()
            except IndexError:
                return
            try:
                outcome = run_task(task, config, policy)
            except BaseException as error:  # noqa: BLE001 - handed to the driving thread
                outcome = error
            results.put(TaskResult(task, outcome))

    def close(self) -> None:
        self._pending.clear()  # a stream closed early stops handing out tasks
        if self._pool is not None:
            self._pool.shutdown(wait=False)


class AsyncioExecutor:
    """Runs a step's tasks as asyncio tasks, at most ``max_concurrency`` at once."""

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._running: set[asyncio.Future[TaskResult]] = set()
        self._done: asyncio.Queue[asyncio.Future[TaskResult]] | None = None

    async def _run(self, loop: PregelLoop, task: PreparedTask) -> TaskResult:
        policy = loop.graph.retry_policy
        if self.semaphore is None:
            return TaskResult(task, await arun_task(task, loop.task_config(task), policy))
        async with self.semaphore:
            return TaskResult(task, await arun_task(task, loop.task_config(task), policy))

    def _start(self, loop: PregelLoop, task: PreparedTask) -> None:
        done = self._done
        assert done is not None
        future = asyncio.ensure_future(self._run(loop, task))
        self._running.add(future)
        future.add_done_callback(done.put_nowait)

    def submit(self, loop: PregelLoop, task: PreparedTask) -> None:
        """Run ``task`` too, in the step being executed (called between two results)."""
        self._start(loop, task)

    async def aexecute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> AsyncIterator[TaskResult]:
        self._done = asyncio.Queue()
        running = self._running
        for task in tasks:
            self._start(loop, task)
        step_timeout = loop.graph.step_timeout
        deadline = time.monotonic() + step_timeout if step_timeout is not None else None
        try:
            while running:
                if deadline is None:
                    future = await self._done.get()
                else:
                    try:
                        future = await asyncio.wait_for(
                            self._done.get(), max(0.0, deadline - time.monotonic())
                        )
                    except TimeoutError:
                        raise _step_timed_out(step_timeout) from None
                running.discard(future)
                yield future.result()
        finally:
            for future in running:
                future.cancel()
            if running:
                # wait until the cancelled nodes have unwound (their cleanup ran)
                await asyncio.wait(running)
            running.clear()
