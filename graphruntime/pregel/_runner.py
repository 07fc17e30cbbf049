"""Run one task: call the node under its config, apply retries, collect its writes."""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from graphruntime._internal._config import RunnableConfig, get_stream_writer, var_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_RESUMING,
    CONFIG_KEY_SCRATCHPAD,
    NS_SEP,
)
from graphruntime.errors import GraphBubbleUp, ParentCommand
from graphruntime.pregel._algo import PreparedTask
from graphruntime.types import Command, RetryPolicy


@lru_cache(maxsize=1024)
def _accepted_kwargs(func: Callable[..., Any]) -> frozenset[str]:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(n for n in ("config", "writer") if n in params)


def _is_graph(obj: Any) -> bool:
    return hasattr(obj, "invoke") and hasattr(obj, "ainvoke") and hasattr(obj, "get_state")


def _kwargs(func: Callable[..., Any], config: RunnableConfig) -> dict[str, Any]:
    try:
        wanted = _accepted_kwargs(func)
    except TypeError:  # unhashable callable
        wanted = frozenset(
            n for n in ("config", "writer") if n in inspect.signature(func).parameters
        )
    kwargs: dict[str, Any] = {}
    if "config" in wanted:
        kwargs["config"] = config
    if "writer" in wanted:
        kwargs["writer"] = get_stream_writer()
    return kwargs


def call_sync(func: Callable[..., Any], value: Any, config: RunnableConfig) -> Any:
    """Call a node, router or subgraph synchronously (async callables get their own loop)."""
    if _is_graph(func):
        return func.invoke(value, config)  # type: ignore[attr-defined]
    result = func(value, **_kwargs(func, config))
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(aw: Any) -> Any:
    return await aw


async def call_async(func: Callable[..., Any], value: Any, config: RunnableConfig) -> Any:
    if _is_graph(func):
        return await func.ainvoke(value, config)  # type: ignore[attr-defined]
    if inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004
    ):
        return await func(value, **_kwargs(func, config))
    ctx_config = config

    def run() -> Any:
        token = var_config.set(ctx_config)
        try:
            return func(value, **_kwargs(func, ctx_config))
        finally:
            var_config.reset(token)

    result = await asyncio.to_thread(run)
    if inspect.isawaitable(result):
        return await result
    return result


def _policy_for(policies: Sequence[RetryPolicy], exc: Exception) -> RetryPolicy | None:
    for policy in policies:
        retry_on = policy.retry_on
        if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
            matches = isinstance(exc, retry_on)
        elif isinstance(retry_on, Sequence):
            matches = isinstance(exc, tuple(retry_on))
        else:
            matches = bool(retry_on(exc))  # type: ignore[call-arg]
        if matches:
            return policy
    return None


def _retry_delay(policy: RetryPolicy, attempt: int) -> float:
    delay = min(
        policy.max_interval, policy.initial_interval * policy.backoff_factor ** (attempt - 1)
    )
    return delay + (random.uniform(0, 1) if policy.jitter else 0)


def _write_outputs(task: PreparedTask, output: Any, config: RunnableConfig) -> None:
    for writer in task.node.writers:
        task.writes.extend(writer(output, config))


def _handle_parent_command(task: PreparedTask, exc: ParentCommand, config: RunnableConfig) -> bool:
    """A Command addressed to this task's graph is applied as the task's own writes."""
    ns: str = config[CONF][CONFIG_KEY_CHECKPOINT_NS]
    cmd = exc.command
    if cmd.graph in (ns, task.name):
        _write_outputs(task, replace(cmd, graph=None), config)
        return True
    if cmd.graph == Command.PARENT:
        parts = ns.split(NS_SEP)
        if parts[-1].isdigit():
            parts.pop()
        exc.command = replace(cmd, graph=NS_SEP.join(parts[:-1]))
        exc.args = (exc.command,)
    return False


def _prepare_retry(task: PreparedTask, config: RunnableConfig) -> RunnableConfig:
    task.writes.clear()
    scratchpad = config[CONF][CONFIG_KEY_SCRATCHPAD]
    scratchpad.interrupt_count = 0
    scratchpad.subgraph_count = 0
    return {**config, CONF: {**config[CONF], CONFIG_KEY_RESUMING: True}}


def _retry_after(policies: Sequence[RetryPolicy], exc: Exception, attempt: int) -> float | None:
    """Seconds to wait before retrying after ``attempt`` failures, or None: do not retry.

    Control flow (an interrupt, a Command for a parent graph) is never retried.
    """
    if isinstance(exc, GraphBubbleUp):
        return None
    policy = _policy_for(policies, exc)
    if policy is None or attempt >= policy.max_attempts:
        return None
    return _retry_delay(policy, attempt)


def _settle(task: PreparedTask, exc: Exception, config: RunnableConfig) -> BaseException | None:
    """The task's final outcome; a Command addressed to this graph becomes its writes."""
    if isinstance(exc, ParentCommand) and _handle_parent_command(task, exc, config):
        return None
    return exc


@dataclass(frozen=True)
class RetryLater:
    """A failed attempt that the task's RetryPolicy retries after ``delay`` seconds."""

    delay: float
    attempts: int  # attempts made so far, this one included
    error: Exception


def _call(task: PreparedTask, config: RunnableConfig) -> None:
    func = task.node.func
    output = task.input if func is None else call_sync(func, task.input, config)
    _write_outputs(task, output, config)


def run_task_attempt(
    task: PreparedTask,
    config: RunnableConfig,
    retry_policy: Sequence[RetryPolicy] = (),
    *,
    attempts_done: int = 0,
) -> BaseException | RetryLater | None:
    """One attempt of ``task``: :func:`run_task` without the sleeping.

    A failure its RetryPolicy would retry returns :class:`RetryLater` (and leaves no
    writes) instead of waiting in this thread: the caller schedules the next attempt,
    as a distributed worker does by re-queuing the task as a job with a countdown.
    ``attempts_done`` counts earlier attempts, so backoff and ``max_attempts`` carry on.
    """
    policies = task.node.retry_policy or tuple(retry_policy)
    if attempts_done:
        config = _prepare_retry(task, config)
    token = var_config.set(config)
    try:
        _call(task, config)
        return None
    except Exception as exc:  # noqa: BLE001 - a node's failure is data: retried or recorded
        delay = _retry_after(policies, exc, attempts_done + 1)
        if delay is None:
            return _settle(task, exc, config)
        task.writes.clear()
        return RetryLater(delay, attempts_done + 1, exc)
    finally:
        var_config.reset(token)


def run_task(
    task: PreparedTask, config: RunnableConfig, retry_policy: Sequence[RetryPolicy] = ()
) -> BaseException | None:
    """Execute ``task`` in this thread; its writes land in ``task.writes``.

    Returns the exception that ended it (a GraphBubbleUp or the node's error), or None.
    """
    policies = task.node.retry_policy or tuple(retry_policy)
    attempt = 0
    while True:
        token = var_config.set(config)
        try:
            _call(task, config)
            return None
        except Exception as exc:  # noqa: BLE001 - a node's failure is data: retried or recorded
            attempt += 1
            delay = _retry_after(policies, exc, attempt)
            if delay is None:
                return _settle(task, exc, config)
            time.sleep(delay)
            config = _prepare_retry(task, config)
        finally:
            var_config.reset(token)


async def arun_task(
    task: PreparedTask, config: RunnableConfig, retry_policy: Sequence[RetryPolicy] = ()
) -> BaseException | None:
    """Async twin of :func:`run_task`."""
    policies = task.node.retry_policy or tuple(retry_policy)
    attempt = 0
    while True:
        token = var_config.set(config)
        try:
            if task.node.func is not None:
                output = await call_async(task.node.func, task.input, config)
            else:
                output = task.input
            _write_outputs(task, output, config)
            return None
        except Exception as exc:  # noqa: BLE001 - a node's failure is data: retried or recorded
            attempt += 1
            delay = _retry_after(policies, exc, attempt)
            if delay is None:
                return _settle(task, exc, config)
            await asyncio.sleep(delay)
            config = _prepare_retry(task, config)
        finally:
            var_config.reset(token)
