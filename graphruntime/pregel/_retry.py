"""Running one task: a node call, its writers, and its RetryPolicy — written once.

:func:`task_attempts` is the task's whole life as a generator. It never calls user
code that could be async and never sleeps: it *asks* its driver to, by yielding

- :class:`Call` — call the node with this input and config, send back its output
  (or throw its exception in);
- :class:`Resolve` — await this awaitable (an ``async def`` router), send back its value;
- :class:`RetryLater` — the attempt failed and the policy retries it after ``delay``.

Three drivers share it: :func:`run_task` (a thread: calls, ``asyncio.run`` for
awaitables, sleeps), :func:`arun_task` (a coroutine: awaits, ``asyncio.sleep``) and
:func:`run_task_attempt` (a distributed job: one attempt; a retry is handed back to
the caller, who schedules it as a new job instead of sleeping).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphruntime._internal._config import RunnableConfig, var_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SCRATCHPAD,
    NS_END,
    NS_SEP,
)
from graphruntime.errors import (
    GraphBubbleUp,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NodeCancelledError,
    ParentCommand,
)
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._callbacks import acall_node, call_node
from graphruntime.pregel._timeout import SYNC_TIMEOUT, call_with_timeout
from graphruntime.runtime import Runtime
from graphruntime.types import Command, RetryPolicy, TimeoutPolicy, TracePolicy

Outcome = BaseException | None
"""How a task ended: ``None`` (its writes are in ``task.writes``) or the exception."""


@dataclass(slots=True)  # not frozen: every task makes one, and frozen fields cost more to set
class Call:
    """Request: call ``func`` on ``input`` under ``config``; send back what it returns.

    ``name``: the task's, for the LangChain run a traced call reports as.
    """

    func: Callable[..., Any]
    input: Any
    config: RunnableConfig
    name: str = ""
    """The node being called (its run's name; named by a ``NodeCancelledError``)."""
    trace_policy: TracePolicy | None = None
    """What tracers record of the call's input and output (the node's ``trace_policy``)."""


@dataclass(frozen=True, slots=True)
class Resolve:
    """Request: await ``awaitable`` (with ``config`` as the context); send back its value."""

    awaitable: Awaitable[Any]
    config: RunnableConfig


@dataclass(frozen=True, slots=True)
class RetryLater:
    """A failed attempt that the task's RetryPolicy retries after ``delay`` seconds."""

    delay: float
    attempts: int  # attempts made so far, this one included
    error: Exception
    first_attempt_time: float | None = None
    """When the first attempt began (``execution_info.node_first_attempt_time``)."""


Request = Call | Resolve | RetryLater


def retries_on(policy: RetryPolicy, exc: Exception) -> bool:
    """Whether ``policy.retry_on`` (a class, classes, or a predicate) matches ``exc``."""
    retry_on = policy.retry_on
    if isinstance(retry_on, Sequence):
        return isinstance(exc, tuple(retry_on))
    if isinstance(retry_on, type) and issubclass(retry_on, Exception):
        return isinstance(exc, retry_on)
    if callable(retry_on):
        return bool(retry_on(exc))  # type: ignore[call-arg]
    raise InvalidArgumentTypeError(
        "retry_on must be an Exception class, a list or tuple of Exception classes, or a callable"
    )


def policy_for(policies: Sequence[RetryPolicy], exc: Exception) -> RetryPolicy | None:
    """The first policy whose ``retry_on`` matches ``exc``."""
    for policy in policies:
        if retries_on(policy, exc):
            return policy
    return None


def retry_delay(policies: Sequence[RetryPolicy], exc: Exception, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``attempt`` failures, or None: do not retry.

    Control flow (an interrupt, a Command for a parent graph) is never retried.
    """
    if isinstance(exc, GraphBubbleUp):
        return None
    policy = policy_for(policies, exc)
    if policy is None or attempt >= policy.max_attempts:
        return None
    delay = min(
        policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1)
    )
    return delay + (random.uniform(0, 1) if policy.jitter else 0)


def _first_attempt_time(config: RunnableConfig) -> float | None:
    runtime = config[CONF].get(CONFIG_KEY_RUNTIME)
    if isinstance(runtime, Runtime) and runtime.execution_info is not None:
        return runtime.execution_info.node_first_attempt_time
    return None


def _fresh_attempt(
    task: PreparedTask,
    config: RunnableConfig,
    attempt: int,
    first_attempt_time: float | None = None,
) -> RunnableConfig:
    """A retry starts over: no writes, interrupt() counting from 0, marked as resuming;
    ``runtime.execution_info.node_attempt`` says which attempt (from 1) it is (and
    ``node_first_attempt_time``, when the first attempt ran in another process)."""
    task.writes.clear()
    conf = config[CONF]
    scratchpad = conf[CONFIG_KEY_SCRATCHPAD]
    scratchpad.interrupt_count = 0
    scratchpad.subgraph_count = 0
    patch: dict[str, Any] = {CONFIG_KEY_RESUMING: True}
    runtime = conf.get(CONFIG_KEY_RUNTIME)
    if isinstance(runtime, Runtime) and runtime.execution_info is not None:
        info: dict[str, Any] = {"node_attempt": attempt}
        if first_attempt_time is not None:
            info["node_first_attempt_time"] = first_attempt_time
        patch[CONFIG_KEY_RUNTIME] = runtime.patch_execution_info(**info)
    return {**config, CONF: {**conf, **patch}}


def _handle_parent_command(
    task: PreparedTask, exc: ParentCommand[Command[Any]], config: RunnableConfig
) -> bool:
    """A Command addressed to this task's graph becomes the task's own writes."""
    ns: str = config[CONF][CONFIG_KEY_CHECKPOINT_NS]
    cmd = exc.command
    if cmd.graph in (ns, task.name) or (
        cmd.graph is not None and _stable(cmd.graph) == _stable(ns)
    ):
        return True
    if cmd.graph == Command.PARENT:
        # the graph running this task: its namespace without this task, and without
        # the call counter of a second subgraph call in one node ("node:<id>|1")
        parts = ns.split(NS_SEP)[:-1]
        while parts and parts[-1].isdigit():
            parts.pop()
        exc.command = replace(cmd, graph=NS_SEP.join(parts))
        exc.args = (exc.command,)
    return False


def _stable(ns: str) -> str:
    """A namespace without task ids or call counters (a stateful subgraph's form)."""
    return NS_SEP.join(p.split(NS_END)[0] for p in ns.split(NS_SEP) if not p.isdigit())


def _write(
    task: PreparedTask, output: Any, config: RunnableConfig
) -> Generator[Request, Any, None]:
    """Run the node's writers on its output; an async router's result is resolved."""
    for writer in task.node.writers:
        token = var_config.set(config)
        try:
            writes = writer(output, config)
        finally:
            var_config.reset(token)
        if type(writes) is not list and inspect.isawaitable(writes):
            writes = yield Resolve(writes, config)
        task.writes.extend(writes)


def task_attempts(
    task: PreparedTask,
    config: RunnableConfig,
    retry_policy: Sequence[RetryPolicy] = (),
    *,
    attempts_done: int = 0,
    first_attempt_time: float | None = None,
) -> Generator[Request, Any, Outcome]:
    """Every attempt of ``task`` until it succeeds, fails for good, or is interrupted.

    ``attempts_done`` counts attempts made elsewhere (earlier jobs), so backoff and
    ``max_attempts`` carry on, and ``first_attempt_time`` says when the first of them
    began. Returns the outcome; writes land in ``task.writes``.
    """
    policies = task.node.retry_policy or tuple(retry_policy)
    attempt = attempts_done
    if attempt:
        config = _fresh_attempt(task, config, attempt + 1, first_attempt_time)
    while True:
        try:
            func = task.node.func
            output = (
                task.input
                if func is None
                else (yield Call(func, task.input, config, task.name, task.node.trace_policy))
            )
            yield from _write(task, output, config)
            return None
        except ParentCommand as exc:
            if not _handle_parent_command(task, exc, config):
                return exc
            try:  # addressed to this very graph: it is this task's own update
                yield from _write(task, replace(exc.command, graph=None), config)
            except Exception as error:  # noqa: BLE001 - recorded as the task's failure
                return error
            return None
        except Exception as exc:  # noqa: BLE001 - a node's failure is data: retried or recorded
            attempt += 1
            delay = retry_delay(policies, exc, attempt)
            if delay is None:
                return exc
            task.writes.clear()
            yield RetryLater(delay, attempt, exc, _first_attempt_time(config))
            config = _fresh_attempt(task, config, attempt + 1)


def _node_cancelled(node: str, cause: BaseException) -> NodeCancelledError:
    error = NodeCancelledError(node)
    error.__cause__ = cause
    return error


def _call_in_context(request: Call) -> Any:
    token = var_config.set(request.config)
    try:
        return call_node(
            request.func, request.input, request.config, request.name, request.trace_policy
        )
    finally:
        var_config.reset(token)


def _drive_sync(attempts: Generator[Request, Any, Outcome], *, sleep: bool) -> Outcome | RetryLater:
    try:
        request = next(attempts)
    except StopIteration as done:
        first: Outcome = done.value
        return first
    while True:
        try:
            if isinstance(request, Call):
                try:
                    output = _call_in_context(request)
                except Exception as exc:  # noqa: BLE001 - handed to the attempt loop
                    request = attempts.throw(exc)
                except asyncio.CancelledError as exc:
                    # no event loop cancels a sync call: the node raised it itself
                    request = attempts.throw(_node_cancelled(request.name, exc))
                else:
                    request = attempts.send(output)
            elif isinstance(request, Resolve):
                try:
                    value = asyncio.run(_awaited(request.awaitable))
                except Exception as exc:  # noqa: BLE001 - handed to the attempt loop
                    request = attempts.throw(exc)
                else:
                    request = attempts.send(value)
            elif sleep:
                time.sleep(request.delay)
                request = attempts.send(None)
            else:
                attempts.close()
                return request
        except StopIteration as done:
            outcome: Outcome = done.value
            return outcome


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def task_timeout(task: PreparedTask) -> TimeoutPolicy | None:
    """The time limits of ``task``'s attempts: its ``Send``'s, else its node's."""
    timeout: TimeoutPolicy | None = task.timeout or task.node.timeout
    return timeout


def _no_sync_timeout(task: PreparedTask) -> None:
    if task_timeout(task) is not None:
        raise InvalidArgumentError(
            f"{SYNC_TIMEOUT} Node {task.name!r} has a timeout: run the graph with ainvoke/astream."
        )


def run_task(
    task: PreparedTask, config: RunnableConfig, retry_policy: Sequence[RetryPolicy] = ()
) -> Outcome:
    """Execute ``task`` in this thread, sleeping out its retries; returns its outcome.

    Raises:
        ValueError: the task has a timeout; only the async drivers can enforce one.
    """
    if task.timeout is not None or task.node.timeout is not None:
        _no_sync_timeout(task)
    outcome = _drive_sync(task_attempts(task, config, retry_policy), sleep=True)
    assert not isinstance(outcome, RetryLater)
    return outcome


def run_task_attempt(
    task: PreparedTask,
    config: RunnableConfig,
    retry_policy: Sequence[RetryPolicy] = (),
    *,
    attempts_done: int = 0,
    first_attempt_time: float | None = None,
) -> Outcome | RetryLater:
    """One attempt of ``task``; a failure its RetryPolicy retries comes back as RetryLater.

    For a caller that schedules the next attempt itself (a distributed worker
    re-queues the task as a job with the delay as its countdown) instead of sleeping.
    """
    _no_sync_timeout(task)
    attempts = task_attempts(
        task,
        config,
        retry_policy,
        attempts_done=attempts_done,
        first_attempt_time=first_attempt_time,
    )
    return _drive_sync(attempts, sleep=False)


async def arun_task(
    task: PreparedTask, config: RunnableConfig, retry_policy: Sequence[RetryPolicy] = ()
) -> Outcome:
    """Execute ``task`` from a coroutine: async nodes are awaited, sync ones run in a thread.

    Each attempt of a task with a ``TimeoutPolicy`` is cancelled past its limits and
    fails with ``NodeTimeoutError`` (which its RetryPolicy may retry).
    """
    outcome = await _drive_async(
        task_attempts(task, config, retry_policy), task_timeout(task), sleep=True
    )
    assert not isinstance(outcome, RetryLater)
    return outcome


async def arun_task_attempt(
    task: PreparedTask,
    config: RunnableConfig,
    retry_policy: Sequence[RetryPolicy] = (),
    *,
    attempts_done: int = 0,
    first_attempt_time: float | None = None,
) -> Outcome | RetryLater:
    """One attempt of ``task`` from a coroutine, within its ``TimeoutPolicy``; a failure
    its RetryPolicy retries comes back as RetryLater (see :func:`run_task_attempt`)."""
    attempts = task_attempts(
        task,
        config,
        retry_policy,
        attempts_done=attempts_done,
        first_attempt_time=first_attempt_time,
    )
    return await _drive_async(attempts, task_timeout(task), sleep=False)


async def _drive_async(
    attempts: Generator[Request, Any, Outcome], timeout: TimeoutPolicy | None, *, sleep: bool
) -> Outcome | RetryLater:
    try:
        request = next(attempts)
    except StopIteration as done:
        first: Outcome = done.value
        return first
    while True:
        try:
            if isinstance(request, Call):
                token = var_config.set(request.config)
                try:
                    if timeout is None:
                        output = await acall_node(
                            request.func,
                            request.input,
                            request.config,
                            request.name,
                            request.trace_policy,
                        )
                    else:
                        output = await call_with_timeout(
                            request.func,
                            request.input,
                            request.config,
                            node=request.name,
                            timeout=timeout,
                            trace_policy=request.trace_policy,
                        )
                except Exception as exc:  # noqa: BLE001 - handed to the attempt loop
                    request = attempts.throw(exc)
                except asyncio.CancelledError as exc:
                    current = asyncio.current_task()
                    if current is not None and current.cancelling():
                        raise  # the run (or a failed sibling) cancels this task
                    request = attempts.throw(_node_cancelled(request.name, exc))
                else:
                    request = attempts.send(output)
                finally:
                    var_config.reset(token)
            elif isinstance(request, Resolve):
                token = var_config.set(request.config)
                try:
                    value = await request.awaitable
                except Exception as exc:  # noqa: BLE001 - handed to the attempt loop
                    request = attempts.throw(exc)
                else:
                    request = attempts.send(value)
                finally:
                    var_config.reset(token)
            elif sleep:
                await asyncio.sleep(request.delay)
                request = attempts.send(None)
            else:
                attempts.close()
                return request
        except StopIteration as done:
            outcome: Outcome = done.value
            return outcome
