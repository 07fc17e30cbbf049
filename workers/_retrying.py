"""The workers' retry schedules, one per thing waited out, on tenacity.

A :class:`Schedule` is an exponential backoff: ``first`` seconds before the first retry,
doubling, never more than ``cap``; bounded by a number of ``retries``, by a time
(``within=``, given where it is used), or by neither. The same schedule drives a
tenacity loop in-process (:meth:`Schedule.call`, :meth:`Schedule.retrying`) and the
countdown of a Celery retry (:meth:`Schedule.delay`), so a job's and a call's waits are
read in one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from workers.errors import StoreRecoveredError, is_transient

if TYPE_CHECKING:
    from tenacity import RetryCallState, Retrying

__all__ = (
    "CHECKPOINT_RACE",
    "JOB_OUTAGE",
    "LISTENER_OUTAGE",
    "RELEASE_OUTAGE",
    "SERVICE_START",
    "WEBHOOK_POST",
    "Schedule",
    "patiently",
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True)
class Schedule:
    """Wait ``first`` seconds before the first retry, doubling up to ``cap``; give up
    after ``retries`` retries (``None``: only a time bound, if any, stops it)."""

    first: float
    cap: float
    retries: int | None = None

    def delay(self, retried: int) -> float:
        """Seconds to wait before the retry that follows ``retried`` retries."""
        # the exponent is bounded: a listener may fail for hours, and 2.0**1100 overflows
        return min(self.cap, self.first * 2.0 ** min(retried, 64))

    def exhausted(self, retried: int) -> bool:
        """Whether ``retried`` retries are all this schedule allows."""
        return self.retries is not None and retried >= self.retries

    def retrying(
        self,
        retry_on: Callable[[BaseException], bool],
        *,
        within: float | None = None,
        doing: str | None = None,
    ) -> Retrying:
        """A tenacity ``Retrying`` on this schedule: it retries what ``retry_on`` accepts,
        for at most ``within`` seconds, and re-raises the last error when it gives up.
        ``doing`` (what the call does) logs a warning before each wait."""
        from tenacity import (
            Retrying,
            retry_if_exception,
            stop_after_attempt,
            stop_after_delay,
            stop_any,
            stop_never,
            wait_exponential,
        )

        stops: list[Any] = []
        if self.retries is not None:
            stops.append(stop_after_attempt(self.retries + 1))
        if within is not None:
            stops.append(stop_after_delay(within))
        return Retrying(
            stop=stop_any(*stops) if stops else stop_never,
            wait=wait_exponential(multiplier=self.first, max=self.cap),
            retry=retry_if_exception(retry_on),
            before_sleep=None if doing is None else _warn(doing),
            reraise=True,
        )

    def call(
        self,
        fn: Callable[[], _T],
        retry_on: Callable[[BaseException], bool],
        *,
        within: float | None = None,
        doing: str | None = None,
    ) -> _T:
        """``fn()``, retried on this schedule (see :meth:`retrying`). The first try runs
        outside tenacity: most calls succeed at once, and building a tenacity loop costs
        more than a statement (about 0.1 ms)."""
        started = time.monotonic()
        try:
            return fn()
        except BaseException as exc:
            late = within is not None and time.monotonic() - started >= within
            if late or self.exhausted(0) or not retry_on(exc):
                raise
            if doing is not None:
                log.warning("%s failed (%s); retrying", doing, exc)
        time.sleep(self.delay(0))
        retries = None if self.retries is None else self.retries - 1
        rest = Schedule(self.first * 2, self.cap, retries)
        left = None if within is None else max(0.0, within - (time.monotonic() - started))
        result: _T = rest.retrying(retry_on, within=left, doing=doing)(fn)
        return result


def _warn(doing: str) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        log.warning("%s failed (%s); retrying", doing, error)

    return before_sleep


JOB_OUTAGE = Schedule(first=0.5, cap=10.0, retries=40)
"""A job that met an unreachable Postgres or Redis, re-queued with a Celery countdown:
about 6 minutes of retries, then the sweeper re-sends the work once the store is back."""

RELEASE_OUTAGE = Schedule(first=0.1, cap=2.0)
"""Ending runs and freeing a thread's lease through an outage (bounded by time)."""

SERVICE_START = Schedule(first=0.1, cap=1.0)
"""Waiting for Postgres or Redis to answer at a command's start (bounded by time)."""

WEBHOOK_POST = Schedule(first=0.2, cap=2.0, retries=2)
"""A run's webhook POST, tried three times in a row; the server tries it again later."""

LISTENER_OUTAGE = Schedule(first=0.5, cap=5.0)
"""A listener's loop (resumes, graph requests) after a failed turn; never gives up, and
starts from ``first`` again after a turn that succeeds."""

CHECKPOINT_RACE = Schedule(first=0.0, cap=0.0, retries=19)
"""A fenced checkpoint write that lost the race for the thread's head (a task job saved
meanwhile): tried again at once, 20 tries in all."""


def patiently(call: Callable[[], _T], doing: str, *, within: float) -> _T:
    """``call()``, retried through an outage (:func:`is_transient`) for up to ``within``
    seconds on :data:`RELEASE_OUTAGE`. A :class:`StoreRecoveredError` is not retried: a
    crash took back what the call was to make durable, so the job is redone instead."""
    return RELEASE_OUTAGE.call(call, _outage, within=within, doing=doing)


def _outage(exc: BaseException) -> bool:
    return is_transient(exc) and not isinstance(exc, StoreRecoveredError)
