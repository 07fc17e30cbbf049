"""A slower clock for LangGraph's time-sensitive tests: the margin a quiet CI machine gives.

A few vendored tests race a node's sleep against the graph's ``step_timeout`` of 1 s (the
timeout must fire, or must not). On LangGraph's CI they run on an idle machine; here they
share 2 cores with the rest of the suite and other work, and a step that takes 0.1 s there
can take over 1 s here. Editing them is not allowed (port.py --check), so the harness slows
their clock instead, by ``UPSTREAM_TIME_SCALE`` (default 3), uniformly:

- ``step_timeout``, when the test reads or sets it on a graph (a data descriptor on the
  target's ``Pregel`` class for the test's duration: the value set is kept, the value read is
  scaled);
- ``time.sleep`` and ``asyncio.sleep`` called by the test's module (its ``time`` and
  ``asyncio`` names are proxies for the test's duration that scale the delay).

Every duration the test deals in grows by the same factor, so which one is longer than
which is unchanged and so is what the test asserts; only the slack grows. The tests chosen
are those whose source names ``step_timeout``, and those of :data:`SLEEP_ORDERED`
(:func:`is_time_sensitive`); none of them measures elapsed time.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SCALE = float(os.environ.get("UPSTREAM_TIME_SCALE", "3"))
MARKER = "upstream_time_scaled"
_RAW = "_upstream_unscaled_step_timeout"


SLEEP_ORDERED = frozenset({"test_imp_nested"})
"""Tests whose asserted order of stream chunks rests on sleeps 10 ms apart (a loaded
machine has swapped two of them)."""


def is_time_sensitive(function: Callable[..., Any]) -> bool:
    """Whether a test races work against ``step_timeout`` (its source names it) or
    against another sleep (:data:`SLEEP_ORDERED`)."""
    if getattr(function, "__name__", "") in SLEEP_ORDERED:
        return True
    try:
        return "step_timeout" in inspect.getsource(function)
    except (OSError, TypeError):
        return False


class _ScaledStepTimeout:
    """``step_timeout`` as set, times ``scale`` when read (None stays None)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        raw = obj.__dict__.get(_RAW, obj.__dict__.get("step_timeout"))
        return None if raw is None else raw * self.scale

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[_RAW] = value


class _SlowTime(types.ModuleType):
    """``time``, whose ``sleep`` lasts ``scale`` times longer."""

    def __init__(self, real: types.ModuleType, scale: float) -> None:
        super().__init__(real.__name__)
        self._real, self._scale = real, scale

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def sleep(self, seconds: float) -> None:
        self._real.sleep(seconds * self._scale)


class _SlowAsyncio(types.ModuleType):
    """``asyncio``, whose ``sleep`` lasts ``scale`` times longer."""

    def __init__(self, real: types.ModuleType, scale: float) -> None:
        super().__init__(real.__name__)
        self._real, self._scale = real, scale

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    async def sleep(self, delay: float, result: Any = None) -> Any:
        return await self._real.sleep(delay * self._scale, result)


@contextmanager
def slower_clock(module: types.ModuleType, scale: float = SCALE) -> Iterator[None]:
    """Run a test of ``module`` with its clock slowed by ``scale`` (see the module doc)."""
    pregel = importlib.import_module("graphruntime.pregel").Pregel
    had = "step_timeout" in pregel.__dict__
    before = pregel.__dict__.get("step_timeout")
    names = {"time": (time, _SlowTime), "asyncio": (asyncio, _SlowAsyncio)}
    swapped = {
        name: real
        for name, (real, _) in names.items()
        if module.__dict__.get(name) is real  # the test module's own `import time`
    }
    pregel.step_timeout = _ScaledStepTimeout(scale)
    for name, real in swapped.items():
        setattr(module, name, names[name][1](real, scale))
    try:
        yield
    finally:
        for name, real in swapped.items():
            setattr(module, name, real)
        if had:
            pregel.step_timeout = before
        else:
            del pregel.step_timeout
