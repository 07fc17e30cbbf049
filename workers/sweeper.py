"""The sweeper: re-sends work that Postgres says is owed but the broker may have lost.

Redis can lose messages (a restart without persistence) and a killed worker's
task stops renewing its lease. Postgres knows every step's open tasks, so a
periodic sweep rebuilds dispatch from there: tasks whose lease expired (or that
no worker picked up in time) are sent again, and runs with nothing open that
have not moved for a while get a coordinator run. Every worker runs a sweeper;
``FOR UPDATE SKIP LOCKED`` keeps them from re-sending the same task twice.
"""

from __future__ import annotations

import logging
import threading

from workers.context import WorkerContext
from workers.messages import TaskMessage

log = logging.getLogger(__name__)


def sweep_once(ctx: WorkerContext) -> tuple[int, int]:
    """One pass; returns (tasks re-sent, runs nudged)."""
    settings = ctx.settings
    resent = 0
    for row in ctx.store.stale_tasks(settings.task_stale_after):
        path = ctx.store.task_path(str(row["run_id"]), row["checkpoint_id"], row["task_id"])
        if path is None:
            continue
        ctx.dispatcher.execute(
            TaskMessage(
                run_id=str(row["run_id"]),
                thread_id=row["thread_id"],
                checkpoint_id=row["checkpoint_id"],
                task_id=row["task_id"],
                task_path=path,
            )
        )
        resent += 1
        log.warning(
            "re-sent task %s of run %s (attempt %s)", row["task_id"], row["run_id"], row["attempts"]
        )
    nudged = 0
    for run_id in ctx.store.stalled_runs(max(settings.task_stale_after, settings.sweep_interval)):
        ctx.dispatcher.coordinate(run_id)
        nudged += 1
    return resent, nudged


class Sweeper(threading.Thread):
    """Runs :func:`sweep_once` every ``sweep_interval`` seconds until stopped."""

    def __init__(self, ctx: WorkerContext) -> None:
        super().__init__(name="graphruntime-sweeper", daemon=True)
        self.ctx = ctx
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(self.ctx.settings.sweep_interval):
            try:
                sweep_once(self.ctx)
            except Exception:  # a failed sweep is retried next interval
                log.exception("sweep failed")

    def stop(self) -> None:
        self._stop_event.set()
