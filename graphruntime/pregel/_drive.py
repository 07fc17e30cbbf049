"""Drivers that execute a loop's tasks: threads for ``stream``, asyncio for ``astream``."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Iterator

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


def run_sync(loop: PregelLoop, max_concurrency: int | None) -> Iterator[StreamChunk]:
    """Drive ``loop`` to completion in this thread, yielding stream chunks as they appear."""
    sink = loop.sink
    executor: concurrent.futures.ThreadPoolExecutor | None = None
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
                if executor is None:
                    executor = concurrent.futures.ThreadPoolExecutor(
                        max_workers=max_concurrency or min(32, len(tasks) + 4)
                    )
                futures = {
                    executor.submit(_run_in_context, task, _config(loop, task), loop): task
                    for task in tasks
                }
                for fut in concurrent.futures.as_completed(futures):
                    exc = fut.result()
                    loop.commit(futures[fut], exc)
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
        if executor is not None:
            executor.shutdown(wait=False)


def _config(loop: PregelLoop, task: PreparedTask) -> RunnableConfig:
    return loop.task_config(task, loop.custom_writer(task))


def _run_in_context(
    task: PreparedTask, config: RunnableConfig, loop: PregelLoop
) -> BaseException | None:
    return run_task(task, config, loop.graph.retry_policy)


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
