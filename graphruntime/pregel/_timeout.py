"""Node timeouts: one attempt of an async node, cancelled past its ``TimeoutPolicy``.

``run_timeout`` caps the attempt's wall-clock time. ``idle_timeout`` caps the time
without progress: a write, a chunk to the custom stream, a ``@task`` call, an event of
a LangChain run under the node (a chat model's token), or ``runtime.heartbeat()``
(under ``refresh_on="heartbeat"`` only the heartbeat counts). Once the attempt timed
out its late writes are dropped and its late calls refused, so a retry starts clean.

Only async work can be cancelled in-process: :func:`check_timeout_supported` refuses
a timeout on a sync node or task when the graph is built.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from graphruntime._internal._call import is_async_callable, is_graph
from graphruntime._internal._config import RunnableConfig, var_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CALL,
    CONFIG_KEY_CUSTOM_WRITER,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SEND,
)
from graphruntime.errors import InvalidArgumentError, NodeTimeoutError
from graphruntime.pregel._callbacks import acall_node
from graphruntime.runtime import Runtime
from graphruntime.types import TimeoutPolicy, TracePolicy

__all__ = ("SYNC_TIMEOUT", "call_with_timeout", "check_timeout_supported", "supports_timeout")

SYNC_TIMEOUT = (
    "Node timeouts are only supported for async nodes because sync Python execution "
    "cannot be safely cancelled in-process."
)


def _class_names(obj: Any) -> set[str]:
    # LangChain's classes recognised by name: graphruntime does not import LangChain
    return {cls.__name__ for cls in type(obj).__mro__}


def supports_timeout(obj: Any) -> bool:
    """Whether ``obj`` (a node's function, runnable, chain or graph) runs as async code
    all through, so a timeout can cancel it: every step of a chain and every branch of a
    parallel must be async; a custom runnable counts when it overrides ``ainvoke``."""
    names = _class_names(obj)
    while "RunnableBindingBase" in names:  # .with_config(), .bind(), ...
        obj = obj.bound
        names = _class_names(obj)
    steps = getattr(obj, "steps", None)  # a LangChain or NodeBuilder sequence
    if "RunnableParallel" in names:
        steps = obj.steps__
    if isinstance(steps, dict):
        steps = steps.values()
    if steps is not None and ("Runnable" in names or not callable(obj)):
        return all(supports_timeout(step) for step in steps)
    if "RunnableLambda" in names:
        return bool(getattr(obj, "afunc", None))
    if is_graph(obj) or is_async_callable(obj):
        return True
    if "Runnable" in names:  # its own ainvoke, not the base's thread-pool fallback
        owner = next((c for c in type(obj).__mro__ if "ainvoke" in vars(c)), None)
        return owner is not None and owner.__name__ != "Runnable"
    return False


def check_timeout_supported(obj: Any, name: str, kind: str = "Node") -> None:
    """Raise ValueError when ``obj`` is sync: its timeout could not be enforced."""
    if not supports_timeout(obj):
        raise InvalidArgumentError(f"{SYNC_TIMEOUT} {kind} {name!r} is sync.")


class _Attempt:
    """The window of one timed attempt: its last progress, and whether it is over."""

    __slots__ = ("__weakref__", "active", "auto", "last")

    def __init__(self, auto: bool) -> None:
        self.active = True
        self.auto = auto
        self.last = time.monotonic()

    def touch(self) -> None:
        if self.active:
            self.last = time.monotonic()

    def _progress(self) -> None:
        if self.auto:
            self.touch()

    def guard_send(
        self, send: Callable[[Sequence[tuple[str, Any]]], None]
    ) -> Callable[[Sequence[tuple[str, Any]]], None]:
        def guarded(writes: Sequence[tuple[str, Any]]) -> None:
            if self.active:  # writes after the timeout are the cancelled attempt's: dropped
                self._progress()
                send(writes)

        return guarded

    def guard_writer(self, writer: Callable[[Any], None]) -> Callable[[Any], None]:
        def guarded(chunk: Any) -> None:
            if self.active:
                self._progress()
                writer(chunk)

        return guarded

    def guard_call(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if not self.active:  # the timed-out attempt starts no more tasks
                raise asyncio.CancelledError
            self._progress()
            return call(*args, **kwargs)

        return guarded

    def wrap(self, config: RunnableConfig) -> RunnableConfig:
        conf = dict(config[CONF])
        if (send := conf.get(CONFIG_KEY_SEND)) is not None:
            conf[CONFIG_KEY_SEND] = self.guard_send(send)
        if (call := conf.get(CONFIG_KEY_CALL)) is not None:
            conf[CONFIG_KEY_CALL] = self.guard_call(call)
        if (writer := conf.get(CONFIG_KEY_CUSTOM_WRITER)) is not None:
            conf[CONFIG_KEY_CUSTOM_WRITER] = self.guard_writer(writer)
        runtime = conf.get(CONFIG_KEY_RUNTIME)
        if isinstance(runtime, Runtime):
            conf[CONFIG_KEY_RUNTIME] = runtime.override(
                stream_writer=self.guard_writer(runtime.stream_writer), heartbeat=self.touch
            )
        wrapped: RunnableConfig = {**config, CONF: conf}
        if self.auto and "langchain_core" in sys.modules:
            # LangChain code under the node (a chat model's tokens) reports progress by
            # callbacks; without LangChain loaded there is none to report
            from graphruntime.pregel._lc_progress import with_progress

            wrapped = with_progress(wrapped, self.touch)
        return wrapped


def _seconds(value: float | timedelta | None) -> float | None:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return None if value is None else float(value)


async def call_with_timeout(
    func: Callable[..., Any],
    value: Any,
    config: RunnableConfig,
    *,
    node: str,
    timeout: TimeoutPolicy,
    trace_policy: TracePolicy | None = None,
) -> Any:
    """Await one attempt of ``func``; past a limit cancel it and raise NodeTimeoutError."""
    run_s = _seconds(timeout.run_timeout)
    idle_s = _seconds(timeout.idle_timeout)
    attempt = _Attempt(auto=timeout.refresh_on == "auto")
    config = attempt.wrap(config)
    token = var_config.set(config)
    try:
        child = asyncio.ensure_future(acall_node(func, value, config, node, trace_policy))
    finally:
        var_config.reset(token)
    started = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            limits: list[tuple[float, str]] = []
            if run_s is not None:
                limits.append((started + run_s, "run"))
            if idle_s is not None:
                limits.append((attempt.last + idle_s, "idle"))
            deadline, kind = min(limits)
            if deadline <= now:
                attempt.active = False
                child.cancel()
                with contextlib.suppress(BaseException):
                    await child
                raise NodeTimeoutError(
                    node,
                    now - started,
                    kind="run" if kind == "run" else "idle",
                    run_timeout=run_s,
                    idle_timeout=idle_s,
                )
            done, _ = await asyncio.wait({child}, timeout=deadline - now)
            if done:
                return child.result()
    except asyncio.CancelledError:
        attempt.active = False
        child.cancel()
        raise
    finally:
        attempt.active = False
