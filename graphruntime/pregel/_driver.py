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
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence
from typing import Protocol

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import INTERRUPT
from graphruntime.errors import (
    ErrorCode,
    GraphBubbleUp,
    GraphInterrupt,
    GraphRecursionError,
    create_error_message,
    is_invalid_resume,
)
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._loop import PregelLoop, TaskResult
from graphruntime.pregel._retry import arun_task, run_task
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.types import RetryPolicy


class StepSuspended(Exception):
    """Raised by an executor that handed the step's tasks to someone else.

    The run is not over: whoever completes the step continues it later from the
    saved checkpoint and pending writes.
    """


class StepExecutor(Protocol):
    """Runs a step's tasks and yields each one's result as it finishes.

    It may also yield ``None`` while tasks still run: stream chunks are waiting in
    the loop's sink (a node wrote them), and the driver hands them to the caller now.
    """

    def execute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> Iterator[TaskResult | None]: ...


class AsyncStepExecutor(Protocol):
    """Async twin of :class:`StepExecutor`."""

    def aexecute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> AsyncIterator[TaskResult]: ...


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
        loop.settle(results)
        loop.close()
    if loop.status == "out_of_steps":
        raise recursion_error(loop)


def paused(loop: PregelLoop) -> None:
    """The run stopped at an interrupt: a subgraph passes it up, a root streams its state."""
    if loop.is_nested:
        raise GraphInterrupt(tuple(loop.interrupts))
    if loop.status == "interrupted":
        loop.emit("values", loop.values_with_pending())
    if not loop.interrupts:
        # a breakpoint (here or in a subgraph) paused the run: say so, without values
        loop.emit("updates", {INTERRUPT: ()})


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
            for result in executor.execute(loop, tasks):
                if result is None:
                    yield from sink.drain()
                    continue
                if not result.recorded:
                    loop.record(result.task, result.outcome)
                results.append(result)
                yield from sink.drain()
            tasks = body.send(results)
    except StopIteration:
        loop.exit(None)
    except GraphInterrupt as interrupt:
        loop.exit(interrupt)
        paused(loop)
    except GeneratorExit as closed:
        loop.exit(closed)
        raise
    except BaseException as error:
        loop.exit(error)
        yield from sink.drain()  # what the run streamed before it failed
        raise
    yield from sink.drain()


async def adrive(
    loop: PregelLoop, executor: AsyncStepExecutor
) -> AsyncGenerator[StreamChunk, None]:
    """Async twin of :func:`drive` (same body: :func:`steps`).

    An eager sink's chunks (tokens, custom data, subgraph steps) are yielded as they
    arrive, while the step's tasks still run. A loop built for an async run queues its
    saver calls; they are awaited here, in order, before the run goes on (so the
    saver's async methods do the I/O).
    """
    sink = loop.sink
    body = steps(loop)
    try:
        await loop.aflush()
        for chunk in sink.drain():
            yield chunk
        tasks = next(body)
        while True:
            await loop.aflush()
            for chunk in sink.drain():
                yield chunk
            results: list[TaskResult] = []
            step = executor.aexecute(loop, tasks)
            items = _as_they_come(step, sink) if sink.eager else step
            try:
                async for item in items:
                    if isinstance(item, TaskResult):
                        if not item.recorded:
                            loop.record(item.task, item.outcome)
                            await loop.aflush()
                        results.append(item)
                        for chunk in sink.drain():
                            yield chunk
                    else:
                        yield item
            finally:
                # a stream closed early (or cancelled) stops the step's running tasks
                aclose = getattr(items, "aclose", None)
                if aclose is not None:
                    await aclose()
            tasks = body.send(results)
    except StopIteration:
        loop.exit(None)
        await loop.aflush()
    except GraphInterrupt as interrupt:
        loop.exit(interrupt)
        await loop.aflush()
        paused(loop)
    except GeneratorExit as closed:
        loop.exit(closed)
        await loop.aflush()
        raise
    except BaseException as error:
        loop.exit(error)
        await loop.aflush()
        if not isinstance(error, asyncio.CancelledError):
            for chunk in sink.drain():  # what the run streamed before it failed
                yield chunk
        raise
    for chunk in sink.drain():
        yield chunk


_DONE = object()


async def _as_they_come(
    results: AsyncIterator[TaskResult], sink: StreamSink
) -> AsyncIterator[TaskResult | StreamChunk]:
    """A step's results, with the sink's chunks interleaved as soon as they are put."""
    arrived = asyncio.Event()
    event_loop = asyncio.get_running_loop()

    def wake() -> None:
        event_loop.call_soon_threadsafe(arrived.set)

    sink.listener = wake
    pending = asyncio.ensure_future(anext(results, _DONE))
    try:
        while True:
            arrived.clear()  # before draining: a chunk put after the drain sets it again
            for chunk in sink.drain():
                yield chunk
            if not pending.done():
                waiter = asyncio.ensure_future(arrived.wait())
                try:
                    await asyncio.wait((pending, waiter), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                continue
            result = pending.result()
            if not isinstance(result, TaskResult):  # _DONE
                return
            yield result
            pending = asyncio.ensure_future(anext(results, _DONE))
    finally:
        sink.listener = None
        if not pending.done():
            pending.cancel()  # stops the step: the executor cancels its running tasks
            await asyncio.gather(pending, return_exceptions=True)


class ThreadExecutor:
    """Runs a step's tasks in this thread (one task) or on up to N threads.

    The threads pull from one queue, one future per thread rather than per task: a
    fan-out of thousands of Sends pays no per-task submit/wait overhead. Results come
    back in completion order; the loop settles them in task order.
    """

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.max_workers = max_concurrency or 32
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pending: deque[tuple[PreparedTask, RunnableConfig, Sequence[RetryPolicy]]] = deque()
        self._results: queue.SimpleQueue[TaskResult | None] = queue.SimpleQueue()

    def execute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> Iterator[TaskResult | None]:
        policy = loop.graph.retry_policy
        sink = loop.sink
        eager = sink.eager
        if len(tasks) == 1 and not eager:
            task = tasks[0]
            yield TaskResult(task, run_task(task, loop.task_config(task), policy))
            return
        if not tasks:
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.max_workers)
        self._pending.extend((t, loop.task_config(t), policy) for t in tasks)
        for _ in range(min(self.max_workers, len(tasks))):
            self._pool.submit(self._work)
        if eager:  # a chunk written while the tasks run wakes this thread to hand it on
            results = self._results
            sink.listener = lambda: results.put(None)
        try:
            remaining = len(tasks)
            while remaining:
                result = self._results.get()
                if result is not None:
                    remaining -= 1
                yield result
        finally:
            if eager:
                sink.listener = None

    def _work(self) -> None:
        while True:
            try:
                task, config, policy = self._pending.popleft()
            except IndexError:
                return
            try:
                outcome = run_task(task, config, policy)
            except BaseException as error:  # noqa: BLE001 - handed to the driving thread
                outcome = error
            self._results.put(TaskResult(task, outcome))

    def close(self) -> None:
        self._pending.clear()  # a stream closed early stops handing out tasks
        if self._pool is not None:
            self._pool.shutdown(wait=False)


class AsyncioExecutor:
    """Runs a step's tasks as asyncio tasks, at most ``max_concurrency`` at once."""

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def _run(self, loop: PregelLoop, task: PreparedTask) -> TaskResult:
        policy = loop.graph.retry_policy
        if self.semaphore is None:
            return TaskResult(task, await arun_task(task, loop.task_config(task), policy))
        async with self.semaphore:
            return TaskResult(task, await arun_task(task, loop.task_config(task), policy))

    async def aexecute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> AsyncIterator[TaskResult]:
        """Yields results as tasks finish.

        A task that fails cancels the step's other running tasks (their results are
        not reported); so does cancelling the run or closing its stream.
        """
        pending = [asyncio.ensure_future(self._run(loop, t)) for t in tasks]
        try:
            for future in asyncio.as_completed(pending):
                result = await future
                yield result
                failure = result.outcome
                if (
                    isinstance(failure, Exception)
                    and not isinstance(failure, GraphBubbleUp)
                    # a bad answer to one interrupt: the others answered still finish
                    and not is_invalid_resume(failure)
                ):
                    break  # the step fails: its other tasks stop
        finally:
            running = [future for future in pending if not future.done()]
            for future in running:
                future.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
