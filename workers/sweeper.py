"""The sweeper: re-sends work that Postgres says is owed but nobody is doing.

A task whose worker died (its heartbeat went stale) or whose message never reached a
worker (a Redis restart), and a run that nothing advances (its coordinator died, or
its message was lost), are found from Postgres, so no message loss loses work.
Every worker runs a sweeper; ``FOR UPDATE SKIP LOCKED`` keeps them from re-sending
the same task twice, and each finding is re-sent once per sweep at most: a node that
runs for hours costs nothing here while its worker beats.

How long is "never reached a worker"? While a queue has messages waiting, a task or
run may legitimately wait behind them, for up to ``task_stale_after`` seconds. When
the queue is empty, anything still unclaimed after twice the heartbeat interval was
lost, and is re-sent (a duplicate is harmless: claims decide who runs it).
"""

from __future__ import annotations

import logging
import threading
from typing import NamedTuple

from workers import observability as observe
from workers.approvals import resume_expired
from workers.context import WorkerContext
from workers.dispatch import resend_orphans

log = logging.getLogger(__name__)

SWEEP_LIMIT = 500


class SweepResult(NamedTuple):
    tasks_resent: int
    runs_nudged: int
    deadlines: int = 0


def sweep_once(ctx: WorkerContext) -> SweepResult:
    """One pass: re-send orphaned tasks, nudge stalled runs, resume waits past their deadline."""
    settings, store, broker = ctx.settings, ctx.store, ctx.broker
    stale = ctx.stale
    depths = broker.queue_depths()
    busy = max(stale, settings.task_stale_after)
    orphans = store.orphaned_tasks(stale, stale if depths.tasks == 0 else busy, SWEEP_LIMIT)
    for orphan in orphans:
        log.warning(
            "re-sending task %s of run %s (send %d)", orphan.task_id, orphan.run_id, orphan.resends
        )
    resent = resend_orphans(broker, settings, orphans)
    stalled = store.stalled_runs(stale, stale if depths.coordinator == 0 else busy, SWEEP_LIMIT)
    for run_id in stalled:
        log.warning("nudging stalled run %s", run_id)
    if stalled:
        broker.send_coordinates(stalled, per_message=settings.coordinate_batch)
    deadlines = resume_expired(
        store, broker, ctx.saver.serde, per_message=settings.coordinate_batch
    )
    return SweepResult(resent, len(stalled), deadlines)


class Sweeper(threading.Thread):
    """Runs :func:`sweep_once` every ``sweep_interval`` seconds until stopped."""

    def __init__(self, ctx: WorkerContext) -> None:
        super().__init__(name="graphruntime-sweeper", daemon=True)
        self.ctx = ctx
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.ctx.settings.sweep_interval):
            try:
                observe.swept(sweep_once(self.ctx))
            except Exception:  # a failed sweep is retried next interval
                log.exception("sweep failed")

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)
