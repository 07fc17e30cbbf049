"""Queueing many runs: a page at a time, each page sent to the workers once it is queued."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workers.errors import NotDispatchedError
from workers.store import NewRun, Run, RunStore

__all__ = ("PAGE", "queue_runs")

PAGE = 1000
"""Runs queued in one transaction."""


def queue_runs(
    store: RunStore,
    news: Sequence[NewRun],
    send: Callable[[Sequence[str]], None],
    *,
    each: Callable[[NewRun, Run | None, bool, Exception | None], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Queue ``news`` a page at a time (one transaction each) and send each page's new runs
    as soon as it is queued, so workers start while the next page is made.

    ``each`` sees every run's ``(new, run, created, error)`` before its page is sent (if
    it raises, that page is not sent: nothing is lost, the sweepers send recorded runs);
    ``progress`` gets (runs queued, all runs) after each page. When ``send`` raises
    :class:`NotDispatchedError` (the broker is away), later pages are not tried; one
    more try at the end sends every run not sent, or raises.
    """
    unsent: list[str] = []
    for start in range(0, len(news), PAGE):
        page = news[start : start + PAGE]
        created: list[str] = []
        for new, (run, fresh, error) in zip(page, store.create_runs(page), strict=True):
            if each is not None:
                each(new, run, fresh, error)
            if run is not None and fresh:
                created.append(run.run_id)
        if unsent or not created:
            unsent += created
        else:
            try:
                send(created)
            except NotDispatchedError:
                unsent = created
        if progress is not None:
            progress(min(start + PAGE, len(news)), len(news))
    if unsent:
        send(unsent)
