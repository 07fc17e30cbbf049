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
from collections import defaultdict

from workers.context import WorkerContext
from workers.coordinator import send_task_jobs
from workers.messages import TaskRef

log = logging.getLogger(__name__)


def sweep_once(ctx: WorkerContext) -> tuple[int, int]:
    """One pass; returns (tasks re-sent, runs nudged)."""
    settings = ctx.settings
    steps: dict[tuple[str, str, str], list[TaskRef]] = defaultdict(list)
    for row in ctx.store.stale_tasks(settings.task_stale_after):
        if row["task_path"] is None:
            continue
        steps[(str(row["run_id"]), row["thread_id"], row["checkpoint_id"])].append(
            TaskRef(id=row["task_id"], path=tuple(row["task_path"]), attempts=row["retry_attempts"])
        )
        log.warning(
            "re-sending task %s of run %s (attempt %s)",
            row["task_id"],
            row["run_id"],
            row["attempts"],
        )
    for (run_id, thread_id, checkpoint_id), refs in steps.items():
        send_task_jobs(ctx, run_id, thread_id, checkpoint_id, refs)
    nudged = 0
    for run_id in ctx.store.stalled_runs(max(settings.task_stale_after, settings.sweep_interval)):
        ctx.dispatcher.coordinate(run_id)
        nudged += 1
    return sum(len(refs) for refs in steps.values()), nudged


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
