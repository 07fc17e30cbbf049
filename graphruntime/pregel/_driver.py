"""Driving a run: the superstep loop, written once, and the saver requests it makes.

:func:`steps` is the loop body every executor shares: plan a step, hand its runnable
tasks to an executor, settle the results, close the step. It is a generator that
yields each step's tasks and receives their results, so the same body serves a
synchronous driver (:func:`drive`), an asynchronous one (:func:`adrive`) and the
workers' coordinator, whose executor may run a task inline, or dispatch the step's
tasks as jobs and suspend the run (it raises out of the driver, see
:class:`StepSuspended`) until the last of them finishes.

An executor that also runs the ``@task`` calls a task makes while it runs implements
:class:`~graphruntime.pregel._calls.CallExecutor` (``submit_call``); the drivers hand
it to the loop. Both in-process executors (``_executors.py``) do. The drivers perform
the loop's saver requests (:func:`perform_saves`, ``_saves.py``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Sequence,
)
from typing import Any, Protocol, cast, runtime_checkable

from graphruntime._internal._constants import INTERRUPT
from graphruntime._internal._twin import END, Call, Close, Next, Request, aiterate
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.errors import (
    ErrorCode,
    GraphBubbleUp,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    GraphRuntimeError,
    create_error_message,
    is_invalid_resume,
)
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._calls import CallExecutor
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._saves import SaverRequest, aperform, perform_now
from graphruntime.pregel._stream import StreamChunk, StreamSink


class StepSuspended(GraphRuntimeError):
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
        # a bad answer to one interrupt: the others answered still finish
        and not is_invalid_resume(outcome)
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
    if not loop.interrupts:
        # a breakpoint (here or in a subgraph) paused the run: say so, without values
        loop.emit("updates", {INTERRUPT: ()})


def _attach(loop: PregelLoop, executor: object) -> None:
    """The executor runs the loop's ``@task`` calls too, when it can."""
    # a method lookup, not isinstance: a runtime-checkable Protocol check is slow
    if callable(getattr(executor, "submit_call", None)):
        loop.calls = cast(CallExecutor, executor)


def _unperformed(loop: PregelLoop) -> tuple[list[SaverRequest], BaseCheckpointSaver] | None:
    """The saver requests the loop made so far, for its driver to perform; None when
    there are none, or when the run's ``SaverIO`` took them."""
    if not loop.outbox:
        return None
    requests = loop.take_saves()
    saver = loop.checkpointer
    assert saver is not None, "a loop without a saver makes no saver requests"
    if (io := loop.options.saver_io) is not None:
        io.perform(saver, requests)
        return None
    return requests, saver


def perform_saves(loop: PregelLoop) -> None:
    """Perform the saver requests the loop made so far: hand them to the run's
    ``SaverIO``, or call the saver at once (see ``_saves.py``)."""
    if (unperformed := _unperformed(loop)) is not None:
        requests, saver = unperformed
        if puts := perform_now(saver, requests):
            loop.saves_performed(puts)


async def aperform_saves(loop: PregelLoop) -> None:
    """Async twin of :func:`perform_saves`: the saver's async methods, awaited in order."""
    if (unperformed := _unperformed(loop)) is not None:
        requests, saver = unperformed
        if puts := await aperform(saver, requests):
            loop.saves_performed(puts)


def drive(loop: PregelLoop, executor: StepExecutor) -> Iterator[StreamChunk]:
    """Run a started loop to its end in this thread, yielding stream chunks as they appear.

    The saver requests each call of the step API makes are performed before the run goes
    on, and before the chunks it streamed reach the caller (:func:`perform_saves`). A step
    waits for every task, a failed one's siblings too: a thread cannot be cancelled, and
    the writes of siblings that finish are kept (as on the workers).
    """
    # a sync run's driving performs its requests itself: it yields chunks only
    return cast(Iterator[StreamChunk], driving(loop, executor, is_async=False))


def adrive(loop: PregelLoop, executor: AsyncStepExecutor) -> AsyncGenerator[StreamChunk, None]:
    """Async twin of :func:`drive` (same body: :func:`driving`).

    An eager sink's chunks (tokens, custom data, subgraph steps) are yielded as they
    arrive, while the step's tasks still run. The loop's saver requests are awaited here,
    in order, before the run goes on (the saver's async methods do the I/O). A failed
    task that no error handler takes cancels its step's other tasks.
    """
    return aiterate(driving(loop, executor, is_async=True))


def driving(
    loop: PregelLoop, executor: StepExecutor | AsyncStepExecutor, *, is_async: bool
) -> Generator[Request | StreamChunk, Any, None]:
    """The body of :func:`drive` and :func:`adrive`: :func:`steps`, each step's tasks
    run by ``executor``, the saver requests performed. Yields the stream chunks, and in
    an async run the requests (``_twin.py``) its shell awaits; a sync run performs them
    here and yields chunks only (so its shell may delegate to it: ``Nested(requests=False)``)."""
    sink = loop.sink
    body = steps(loop)
    start = (
        _astart(cast(AsyncStepExecutor, executor))
        if is_async
        else cast(StepExecutor, executor).execute
    )
    _attach(loop, executor)
    try:
        yield from _performed(loop, is_async)  # what first() made
        yield from sink.drain()
        tasks = next(body)
        while True:
            # the step's checkpoint (and the one the next step starts at)
            yield from _performed(loop, is_async)
            if sink.chunks:
                yield from sink.drain()
            results: list[TaskResult] = []
            items = start(loop, tasks)
            item: Any = None
            try:
                # a sync step's next result is read here, as its shell would read it
                while (item := (yield Next(items)) if is_async else next(items, END)) is not END:
                    if item is None:  # chunks are waiting in the sink
                        yield from sink.drain()
                    elif isinstance(item, TaskResult):
                        if not item.recorded:
                            loop.record(item.task, item.outcome)
                            yield from _performed(loop, is_async)  # the task's writes
                        results.append(item)
                        if item.outcome is not None:
                            _submit_handler(loop, executor, item)
                        if sink.chunks:
                            yield from sink.drain()
                        if is_async and _fails_step(loop, item):
                            break  # the step has failed: its other tasks are cancelled
                    else:  # a chunk an eager async step put while its tasks run
                        yield item
            finally:
                # a closed stream, a cancelled run or a failed step stops the running tasks
                if item is not END and is_async:
                    yield Close(items)
                elif item is not END:
                    Close(items).now()
            tasks = body.send(results)
    except StopIteration:
        loop.exit(None)
        yield from _performed(loop, is_async)
    except GraphInterrupt as interrupt:
        loop.exit(interrupt)
        yield from _performed(loop, is_async)
        paused(loop)
    except GeneratorExit as closed:
        loop.exit(closed)
        yield from _performed(loop, is_async)
        raise
    except BaseException as error:
        loop.exit(error)
        yield from _performed(loop, is_async)
        if not (is_async and isinstance(error, asyncio.CancelledError)):
            yield from sink.drain()  # what the run streamed before it failed
        raise
    yield from sink.drain()


def _performed(loop: PregelLoop, is_async: bool) -> tuple[Request, ...]:
    """The saver requests the loop made so far: performed here in a sync run (as its
    shell would: nothing is left to yield), one request to await in an async one.

    A tuple, not a generator: ``yield from`` it costs no frame (:func:`driving` calls it
    after every step and every task's result).
    """
    if not loop.outbox:
        return ()
    if is_async:
        return (Call(perform_saves, aperform_saves, loop),)
    perform_saves(loop)
    return ()


def _astart(executor: AsyncStepExecutor) -> Callable[[PregelLoop, Sequence[PreparedTask]], Any]:
    def start(loop: PregelLoop, tasks: Sequence[PreparedTask]) -> AsyncIterator[Any]:
        step = executor.aexecute(loop, tasks)
        return _as_they_come(step, loop.sink) if loop.stream_eager else step

    return start


_DONE = object()


async def _as_they_come(
    results: AsyncIterator[TaskResult], sink: StreamSink
) -> AsyncIterator[TaskResult | StreamChunk]:
    """A step's results, with the sink's chunks interleaved as soon as they are put.

    A chunk wakes this generator one loop tick after it is put (one callback, no
    extra task): the task that put it (a ``@task`` call's caller) goes on first, but a
    call it then starts runs after the chunk reached the caller, as in LangGraph.
    """
    event_loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    waiter: asyncio.Future[None] | None = None

    def wake_now(_: Any = None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def wake() -> None:
        if threading.get_ident() == loop_thread:
            event_loop.call_soon(wake_now)
        else:
            event_loop.call_soon_threadsafe(wake_now)

    sink.listener = wake
    pending = asyncio.ensure_future(anext(results, _DONE))
    pending.add_done_callback(wake_now)
    try:
        while True:
            # a fresh waiter before draining: a chunk put after the drain resolves it
            waiter = event_loop.create_future()
            for chunk in sink.drain():
                yield chunk
            if not pending.done():
                await waiter
                continue
            result = pending.result()
            if not isinstance(result, TaskResult):  # _DONE
                return
            yield result
            pending = asyncio.ensure_future(anext(results, _DONE))
            pending.add_done_callback(wake_now)
    finally:
        sink.listener = None
        if not pending.done():
            pending.cancel()  # stops the step: the executor cancels its running tasks
            await asyncio.gather(pending, return_exceptions=True)
