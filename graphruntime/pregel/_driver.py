"""Driving a run: the superstep loop, written once, and the executors that run its tasks.

:func:`steps` is the loop body every executor shares: plan a step, hand its runnable
tasks to an executor, settle the results, close the step. It is a generator that
yields each step's tasks and receives their results, so the same body serves a
synchronous driver (:func:`drive`), an asynchronous one (:func:`adrive`) and the
workers' coordinator, whose executor may run a task inline, or dispatch the step's
tasks as jobs and suspend the run (it raises out of the driver, see
:class:`StepSuspended`) until the last of them finishes.

An executor that also runs the ``@task`` calls a task makes while it runs implements
:class:`~graphruntime.pregel._calls.CallExecutor` (``submit_call``); the drivers hand
it to the loop. Both in-process executors do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator, Sequence
from typing import Any, Protocol, cast, runtime_checkable

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import INTERRUPT
from graphruntime.errors import (
    ErrorCode,
    GraphBubbleUp,
    GraphDrained,
    GraphInterrupt,
    GraphRecursionError,
    create_error_message,
    is_invalid_resume,
)
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._call import call_outcome, in_async_task
from graphruntime.pregel._calls import CallExecutor, LoopCalls, arun_call
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._retry import arun_task, run_task
from graphruntime.pregel._saves import aperform, perform_now
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


def perform_saves(loop: PregelLoop) -> None:
    """Perform the saver requests the loop made so far: hand them to the run's
    ``SaverIO``, or call the saver at once (see ``_saves.py``)."""
    if not loop.outbox:
        return
    requests = loop.take_saves()
    saver = loop.checkpointer
    assert saver is not None, "a loop without a saver makes no saver requests"
    io = loop.options.saver_io
    if io is not None:
        io.perform(saver, requests)
    else:
        loop.saves_performed(requests, perform_now(saver, requests))


async def aperform_saves(loop: PregelLoop) -> None:
    """Async twin of :func:`perform_saves`: the saver's async methods, awaited in order."""
    if not loop.outbox:
        return
    requests = loop.take_saves()
    saver = loop.checkpointer
    assert saver is not None, "a loop without a saver makes no saver requests"
    io = loop.options.saver_io
    if io is not None:
        io.perform(saver, requests)
    else:
        loop.saves_performed(requests, await aperform(saver, requests))


def drive(loop: PregelLoop, executor: StepExecutor) -> Iterator[StreamChunk]:
    """Run a started loop to its end in this thread, yielding stream chunks as they appear.

    The saver requests each call of the step API makes are performed before the run goes
    on, and before the chunks it streamed reach the caller (:func:`perform_saves`). A step
    waits for every task, a failed one's siblings too: a thread cannot be cancelled, and
    the writes of siblings that finish are kept (as on the workers).
    """
    sink = loop.sink
    body = steps(loop)
    _attach(loop, executor)
    try:
        perform_saves(loop)  # what first() made
        yield from sink.drain()
        tasks = next(body)
        while True:
            perform_saves(loop)
            if sink.chunks:
                yield from sink.drain()
            results: list[TaskResult] = []
            running = executor.execute(loop, tasks)
            try:
                for result in running:
                    if result is None:
                        yield from sink.drain()
                        continue
                    if not result.recorded:
                        loop.record(result.task, result.outcome)
                        perform_saves(loop)
                    results.append(result)
                    if result.outcome is not None:
                        _submit_handler(loop, executor, result)
                    if sink.chunks:
                        yield from sink.drain()
            finally:
                close = getattr(running, "close", None)
                if close is not None:
                    close()
            tasks = body.send(results)
    except StopIteration:
        loop.exit(None)
        perform_saves(loop)
    except GraphInterrupt as interrupt:
        loop.exit(interrupt)
        perform_saves(loop)
        paused(loop)
    except GeneratorExit as closed:
        loop.exit(closed)
        perform_saves(loop)
        raise
    except BaseException as error:
        loop.exit(error)
        perform_saves(loop)
        yield from sink.drain()  # what the run streamed before it failed
        raise
    yield from sink.drain()


async def adrive(
    loop: PregelLoop, executor: AsyncStepExecutor
) -> AsyncGenerator[StreamChunk, None]:
    """Async twin of :func:`drive` (same body: :func:`steps`).

    An eager sink's chunks (tokens, custom data, subgraph steps) are yielded as they
    arrive, while the step's tasks still run. The loop's saver requests are awaited here,
    in order, before the run goes on (the saver's async methods do the I/O).
    """
    sink = loop.sink
    body = steps(loop)
    _attach(loop, executor)
    try:
        await aperform_saves(loop)
        for chunk in sink.drain():
            yield chunk
        tasks = next(body)
        while True:
            await aperform_saves(loop)
            for chunk in sink.drain():
                yield chunk
            results: list[TaskResult] = []
            step = executor.aexecute(loop, tasks)
            items = _as_they_come(step, sink) if loop.stream_eager else step
            try:
                async for item in items:
                    if isinstance(item, TaskResult):
                        if not item.recorded:
                            loop.record(item.task, item.outcome)
                            await aperform_saves(loop)
                        results.append(item)
                        _submit_handler(loop, executor, item)
                        for chunk in sink.drain():
                            yield chunk
                        if _fails_step(loop, item):
                            break  # the step has failed: its other tasks are cancelled
                    else:
                        yield item
            finally:
                # a closed stream, a cancelled run or a failed step stops the running tasks
                aclose = getattr(items, "aclose", None)
                if aclose is not None:
                    await aclose()
            tasks = body.send(results)
    except StopIteration:
        loop.exit(None)
        await aperform_saves(loop)
    except GraphInterrupt as interrupt:
        loop.exit(interrupt)
        await aperform_saves(loop)
        paused(loop)
    except GeneratorExit as closed:
        loop.exit(closed)
        await aperform_saves(loop)
        raise
    except BaseException as error:
        loop.exit(error)
        await aperform_saves(loop)
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


class _CallJob:
    """A ``@task`` call submitted to a :class:`ThreadExecutor`: run once, by whoever
    gets to it first, a pool thread or the caller waiting for it (so callers blocked on
    their calls can never hold every pool thread while the calls wait for one)."""

    def __init__(self, loop: LoopCalls, task: PreparedTask) -> None:
        self.loop = loop
        self.task = task
        self.future: concurrent.futures.Future[Any] = _HelpingFuture(self)
        self._claimed = False
        self._claim = threading.Lock()

    def run(self) -> None:
        with self._claim:
            if self._claimed:
                return
            self._claimed = True
        loop, task = self.loop, self.task
        try:
            outcome = run_task(task, loop.task_config(task), loop.graph.retry_policy)
            loop.record(task, outcome)
        except BaseException as failure:  # noqa: BLE001 - handed to the caller
            self.future.set_exception(failure)
            return
        value, error = call_outcome(task) if outcome is None else (None, outcome)
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(value)


class _HelpingFuture(concurrent.futures.Future[Any]):
    """Runs its call in the waiting thread when no pool thread has started it yet."""

    def __init__(self, job: _CallJob) -> None:
        super().__init__()
        self._job = job

    def result(self, timeout: float | None = None) -> Any:
        self._job.run()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._job.run()
        return super().exception(timeout)


def _step_timed_out(step_timeout: float | None) -> TimeoutError:
    return TimeoutError(
        f"The step did not finish within the graph's step_timeout ({step_timeout}s)"
    )


class ThreadExecutor:
    """Runs a step's tasks in this thread (one task) or on up to N threads.

    The threads pull from one queue, one future per thread rather than per task: a
    fan-out of thousands of Sends pays no per-task submit/wait overhead. Results come
    back in completion order; the loop settles them in task order. ``@task`` calls run
    on the same pool (see :class:`_CallJob`).
    """

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.max_workers = max_concurrency or 32
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        # each item carries the queue of the step it belongs to: a thread still running a
        # task of a step that ended early cannot hand its result to the next step
        self._pending: deque[
            tuple[
                PreparedTask,
                RunnableConfig,
                Sequence[RetryPolicy],
                queue.SimpleQueue[TaskResult | None],
            ]
        ] = deque()
        self._results: queue.SimpleQueue[TaskResult | None] = queue.SimpleQueue()
        self._inline: deque[PreparedTask] | None = None
        self._outstanding = 0
        self._lock = threading.Lock()
        self._calls: list[_CallJob] = []

    def _executor(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.max_workers)
            return self._pool

    def execute(
        self, loop: PregelLoop, tasks: Sequence[PreparedTask]
    ) -> Iterator[TaskResult | None]:
        policy = loop.graph.retry_policy
        step_timeout = loop.graph.step_timeout
        sink = loop.sink
        eager = loop.stream_eager
        if len(tasks) == 1 and step_timeout is None and not eager:
            # one task runs in this thread, and so do the tasks submitted meanwhile
            inline: deque[PreparedTask] = deque(tasks)
            self._inline = inline
            try:
                while inline:
                    task = inline.popleft()
                    yield TaskResult(task, run_task(task, loop.task_config(task), policy))
                self._finish_calls()
            finally:
                self._inline = None
            return
        if not tasks:
            return
        self._outstanding = len(tasks)
        results: queue.SimpleQueue[TaskResult | None] = queue.SimpleQueue()
        self._results = results
        self._pending.extend((t, loop.task_config(t), policy, results) for t in tasks)
        for _ in range(min(self.max_workers, len(tasks))):
            self._start_worker()
        if eager:  # a chunk written while the tasks run wakes this thread to hand it on
            sink.listener = lambda: results.put(None)
        deadline = time.monotonic() + step_timeout if step_timeout is not None else None
        try:
            while self._outstanding:
                try:
                    result = results.get(
                        timeout=None if deadline is None else max(0.0, deadline - time.monotonic())
                    )
                except queue.Empty:
                    raise _step_timed_out(step_timeout) from None
                if result is not None:
                    self._outstanding -= 1
                yield result
            self._finish_calls()
        finally:
            if eager:
                sink.listener = None
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
        self._executor().submit(self._work)

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

    def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
        """Run a ``@task`` call on the pool; the caller gets a future of its result."""
        job = _CallJob(loop, task)
        with self._lock:
            self._calls.append(job)
        self._executor().submit(job.run)
        if in_async_task():  # an async caller run by a sync graph: it awaits the call
            return asyncio.wrap_future(job.future)
        return job.future

    def _finish_calls(self) -> None:
        """A step ends when its calls do, awaited by their callers or not (as LangGraph)."""
        if not self._calls:  # a step without calls (most): no lock to take
            return
        while True:
            with self._lock:
                jobs, self._calls = self._calls, []
            if not jobs:
                return
            for job in jobs:
                job.future.exception()  # waits; runs it here if no thread took it yet

    def close(self) -> None:
        self._pending.clear()  # a stream closed early stops handing out tasks
        if self._pool is not None:
            self._pool.shutdown(wait=False)


class AsyncioExecutor:
    """Runs a step's tasks as asyncio tasks, at most ``max_concurrency`` at once.

    ``@task`` calls run as asyncio tasks of the same event loop, whether the caller is a
    coroutine (it gets the task: awaitable, cancellable) or a sync node in a worker
    thread (it gets a ``concurrent.futures.Future``).
    """

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.semaphore = asyncio.Semaphore(max_concurrency) if max_concurrency else None
        self._running: set[asyncio.Future[TaskResult]] = set()
        self._done: asyncio.Queue[asyncio.Future[TaskResult]] | None = None
        self._event_loop: asyncio.AbstractEventLoop | None = None
        self._calls: list[asyncio.Future[Any] | concurrent.futures.Future[Any]] = []

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
        """Yields results as tasks finish; closing it (a failed step, a closed stream, a
        cancelled run) cancels the tasks still running and waits for them to unwind."""
        self._event_loop = asyncio.get_running_loop()
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
                if future not in running:
                    continue
                running.discard(future)
                if future.cancelled():
                    continue
                yield future.result()
            await self._finish_calls()
        finally:
            for future in running:
                future.cancel()
            if running:
                # wait until the cancelled nodes have unwound (their cleanup ran)
                await asyncio.wait(running)
            running.clear()

    def submit_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
        """Run a ``@task`` call on the event loop; the caller gets a future of its result."""
        event_loop = self._event_loop
        assert event_loop is not None, "submit_call before aexecute"
        future: asyncio.Future[Any] | concurrent.futures.Future[Any]
        if in_async_task() and asyncio.get_running_loop() is event_loop:
            future = event_loop.create_task(self._run_call(loop, task))
        else:
            future = asyncio.run_coroutine_threadsafe(self._run_call(loop, task), event_loop)
        self._calls.append(future)
        return future

    async def _finish_calls(self) -> None:
        """A step ends when its calls do, awaited by their callers or not (as LangGraph)."""
        while self._calls:
            calls, self._calls = self._calls, []
            await asyncio.gather(
                *(c if isinstance(c, asyncio.Future) else asyncio.wrap_future(c) for c in calls),
                return_exceptions=True,
            )

    async def _run_call(self, loop: LoopCalls, task: PreparedTask) -> Any:
        return await arun_call(loop, task)
