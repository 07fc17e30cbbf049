"""Node timeouts: one attempt of an async node, cancelled past its ``TimeoutPolicy``.

``run_timeout`` caps the attempt's wall-clock time. ``idle_timeout`` caps the time
without progress: a write, a chunk to the custom stream, or ``runtime.heartbeat()``
(under ``refresh_on="heartbeat"`` only the heartbeat counts). Once the attempt timed
out its late writes are dropped, so a retry starts clean.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from graphruntime._internal._call import call_async
from graphruntime._internal._config import RunnableConfig, var_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CUSTOM_WRITER,
    CONFIG_KEY_RUNTIME,
    CONFIG_KEY_SEND,
)
from graphruntime.errors import NodeTimeoutError
from graphruntime.runtime import Runtime
from graphruntime.types import TimeoutPolicy

__all__ = ("SYNC_TIMEOUT", "call_with_timeout")

SYNC_TIMEOUT = (
    "Node timeouts are only supported for async nodes because sync Python execution "
    "cannot be safely cancelled in-process."
)


class _Attempt:
    """The window of one timed attempt: its last progress, and whether it is over."""

    __slots__ = ("active", "auto", "last")

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

    def wrap(self, config: RunnableConfig) -> RunnableConfig:
        conf = dict(config[CONF])
        if (send := conf.get(CONFIG_KEY_SEND)) is not None:
            conf[CONFIG_KEY_SEND] = self.guard_send(send)
        if (writer := conf.get(CONFIG_KEY_CUSTOM_WRITER)) is not None:
            conf[CONFIG_KEY_CUSTOM_WRITER] = self.guard_writer(writer)
        runtime = conf.get(CONFIG_KEY_RUNTIME)
        if isinstance(runtime, Runtime):
            conf[CONFIG_KEY_RUNTIME] = runtime.override(
                stream_writer=self.guard_writer(runtime.stream_writer), heartbeat=self.touch
            )
        return {**config, CONF: conf}


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
) -> Any:
    """Await one attempt of ``func``; past a limit cancel it and raise NodeTimeoutError."""
    run_s = _seconds(timeout.run_timeout)
    idle_s = _seconds(timeout.idle_timeout)
    attempt = _Attempt(auto=timeout.refresh_on == "auto")
    config = attempt.wrap(config)
    token = var_config.set(config)
    try:
        child = asyncio.ensure_future(call_async(func, value, config))
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
