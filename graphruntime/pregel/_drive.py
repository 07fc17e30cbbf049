"""Drivers that execute a loop's tasks: threads for ``stream``, asyncio for ``astream``."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence

from graphruntime._internal._config import RunnableConfig
from graphruntime.errors import (
    ErrorCode,
    GraphBubbleUp,
    GraphInterrupt,
    GraphRecursionError,
    create_error_message,
)
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._loop import PregelLoop, StreamChunk
from graphruntime.pregel._runner import arun_task, run_task
from graphruntime.types import RetryPolicy


def recursion_error(loop: PregelLoop) -> GraphRecursionError:
    return GraphRecursionError(
        create_error_message(
            message=f"Recursion limit of {loop.recursion_limit} reached without hitting a "
            "stop condition. You can increase the limit by setting the `recursion_limit` "
            "config key.",
            error_code=ErrorCode.GRAPH_RECURSION_LIMIT,
        )
    )


def _settle(loop: PregelLoop, outcomes: list[BaseException | None]) -> None:
    """After all tasks of a step finished: raise the first error, then any interrupt."""
    for exc in outcomes:
        if exc is not None and not isinstance(exc, GraphBubbleUp):
            raise exc
    for exc in outcomes:
        if exc is not None and not isinstance(exc, GraphInterrupt):
            raise exc  # ParentCommand travelling up
    if any(isinstance(exc, GraphInterrupt) for exc in outcomes):
        loop.status = "interrupted"
        raise GraphInterrupt(tuple(loop.interrupts))


def _on_interrupt(loop: PregelLoop) -> None:
    if loop.is_nested:
        raise GraphInterrupt(tuple(loop.interrupts))
    if loop.status == "interrupted":
        loop.emit("values", loop.values_with_pending())


class _StepPool:
    """Runs a step's tasks on up to N threads that pull from one queue.

    One future per worker thread, not per task: a fan-out of thousands of Sends
    pays no per-task submit/wait overhead. Results come back in completion order.
    """

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=max_workers)
        self.pending: deque[tuple[PreparedTask, RunnableConfig]] = deque()
        self.results: queue.SimpleQueue[tuple[PreparedTask, BaseException | None]] = (
            queue.SimpleQueue()
        )

    def _work(self, retry_policy: Sequence[RetryPolicy]) -> None:
        while True:
            try:
                task, config = self.pending.popleft()
            except IndexError:
                return
            try:
                exc = run_task(task, config, retry_policy)
            except BaseException as error:  # noqa: BLE001 - handed to the driving thread
                exc = error
            self.results.put((task, exc))

    def run(
        self, items: list[tuple[PreparedTask, RunnableConfig]], retry_policy: Sequence[RetryPolicy]
    ) -> Iterator[tuple[PreparedTask, BaseException | None]]:
        self.pending.extend(items)
        for _ in range(min(self.max_workers, len(items))):
            self.executor.submit(self._work, retry_policy)
        for _ in range(len(items)):
            yield self.results.get()

    def close(self) -> None:
        self.pending.clear()  # a stream closed early stops handing out tasks
        self.executor.shutdown(wait=False)


def run_sync(loop: PregelLoop, max_concurrency: int | None) -> Iterator[StreamChunk]:
    """Drive ``loop`` to completion in this thread, yielding stream chunks as they appear."""
    sink = loop.sink
    pool: _StepPool | None = None
    try:
        loop.first()
        yield from sink.drain()
        while loop.tick():
            yield from sink.drain()
            tasks = loop.runnable_tasks()
            outcomes: list[BaseException | None] = []
            if len(tasks) == 1:
                task = tasks[0]
                exc = run_task(task, _config(loop, task), loop.graph.retry_policy)
                loop.commit(task, exc)
                outcomes.append(exc)
                yield from sink.drain()
            elif tasks:
                if pool is None:
                    pool = _StepPool(max_concurrency or 32)
                items = [(task, _config(loop, task)) for task in tasks]
                for task, exc in pool.run(items, loop.graph.retry_policy):
                    loop.commit(task, exc)
                    outcomes.append(exc)
                    yield from sink.drain()
            _settle(loop, outcomes)
            loop.after_tick()
            yield from sink.drain()
        if loop.status == "out_of_steps":
            raise recursion_error(loop)
    except GraphInterrupt:
        _on_interrupt(loop)
        yield from sink.drain()
    finally:
        if pool is not None:
            pool.close()


def _config(loop: PregelLoop, task: PreparedTask) -> RunnableConfig:
    return loop.task_config(task, loop.custom_writer(task))


async def run_async(loop: PregelLoop, max_concurrency: int | None) -> AsyncIterator[StreamChunk]:
    """Async twin of :func:`run_sync`: tasks of a step run as asyncio tasks."""
    sink = loop.sink
    semaphore = asyncio.Semaphore(max_concurrency) if max_concurrency else None

    async def run_one(task: PreparedTask) -> tuple[PreparedTask, BaseException | None]:
        if semaphore is None:
            return task, await arun_task(task, _config(loop, task), loop.graph.retry_policy)
        async with semaphore:
            return task, await arun_task(task, _config(loop, task), loop.graph.retry_policy)

    try:
        loop.first()
        for chunk in sink.drain():
            yield chunk
        while loop.tick():
            for chunk in sink.drain():
                yield chunk
            outcomes: list[BaseException | None] = []
            pending = [asyncio.ensure_future(run_one(t)) for t in loop.runnable_tasks()]
            for fut in asyncio.as_completed(pending):
                task, exc = await fut
                loop.commit(task, exc)
                outcomes.append(exc)
                for chunk in sink.drain():
                    yield chunk
            _settle(loop, outcomes)
            loop.after_tick()
            for chunk in sink.drain():
                yield chunk
        if loop.status == "out_of_steps":
            raise recursion_error(loop)
    except GraphInterrupt:
        _on_interrupt(loop)
        for chunk in sink.drain():
            yield chunk
