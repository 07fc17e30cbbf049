"""The in-process executors: a step's tasks on threads, or as asyncio tasks.

Both run the ``@task`` calls a task makes too (``submit_call``, see
:class:`~graphruntime.pregel._calls.CallExecutor`), and can add a task to the step being
executed (``submit``: a failed node's error handler, while its siblings still run).
``Pregel.invoke``/``stream`` drive a run with :class:`ThreadExecutor`, ``ainvoke``/
``astream`` with :class:`AsyncioExecutor` (see ``_driver.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from graphruntime._internal._config import RunnableConfig
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._call import call_outcome, in_async_task
from graphruntime.pregel._calls import LoopCalls, arun_call
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._retry import arun_task, run_task
from graphruntime.types import RetryPolicy

__all__ = ("AsyncioExecutor", "ThreadExecutor")


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
