"""The step barrier, the sweeper's queries and the runs' stream events (part of
:class:`~workers.store.RunStore`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from workers.store._connector import Row, StoreBase, one
from workers.store._model import Event, EventRow, OrphanTask, StepTask, TaskClaims

__all__ = ("StepBarrier",)


class StepBarrier(StoreBase):
    """A dispatched step's task rows: claimed by the jobs that run them, completed once;
    what the sweeper re-sends; the events the task jobs keep."""

    # --- the step barrier ---------------------------------------------------------------

    def register_tasks(
        self,
        run_id: str,
        thread_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any]]],
        epoch: str | None = None,
    ) -> list[str]:
        """Open the barrier rows of a step's (task id, path); returns the ids new here.

        ``epoch``: as :meth:`~workers.store.RunStore.finish_and_release_many`'s (the step's
        checkpoint and the run's writes before it may have been committed asynchronously).
        """
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_ids": [tid for tid, _ in tasks],
            "paths": [json.dumps(list(path)) for _, path in tasks],
            "thread_id": thread_id,
        }
        if epoch is None:
            rows = self._all("register_tasks", params)
        else:
            check = ("check_epoch", {"epoch": epoch})
            rows = self.db.batch("register_tasks", [check, ("register_tasks", params)])[-1]
        return [r["task_id"] for r in rows]

    def step_tasks(self, run_id: str, checkpoint_id: str) -> dict[str, StepTask]:
        rows = self._all("step_tasks", {"run_id": run_id, "checkpoint_id": checkpoint_id})
        return {r["task_id"]: StepTask(r["task_id"], r["status"], r["error"]) for r in rows}

    def claim_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        tasks: Sequence[tuple[str, Sequence[Any], int]],
        worker: str,
        stale: float,
        token: str | None = None,
    ) -> TaskClaims:
        """Claim the (task id, path, attempts) still open and held by nobody alive: their
        ids in order, and the server's epoch (None when none was claimed). ``token`` names
        the job execution that claims (see :meth:`heartbeat`).

        A task whose registered path differs from the message's is not claimed, nor is
        one whose recorded retries are past the message's attempt.
        """
        base = {"run_id": run_id, "checkpoint_id": checkpoint_id, "worker": worker}
        rows = [
            {
                **base,
                "token": token,
                "stale": stale,
                "task_id": t,
                "path": json.dumps(list(p)),
                "attempts": a,
            }
            for t, p, a in tasks
        ]
        with self.db.session("claim_tasks", transaction=True) as s:
            s.all("async_commit")
            claimed = {r["task_id"] for found in s.many("claim_task", rows) for r in found}
            epoch = one(s.all("epoch")) if claimed else None
        ids = [t for t, _, _ in tasks if t in claimed]
        return TaskClaims(ids, None if epoch is None else str(epoch["epoch"]))

    def complete_tasks(
        self,
        run_id: str,
        checkpoint_id: str,
        outcomes: Mapping[str, Mapping[str, Any] | None],
        worker: str,
        events: Mapping[str, Sequence[EventRow]],
        epoch: str | None = None,
    ) -> tuple[int, int]:
        """Mark claimed tasks done with their error (or None), keep their events.

        Returns (how many this call completed, tasks of the step still open). The step's
        counter goes down in the same transaction, so exactly one completer sees zero.
        ``epoch``: the one :meth:`claim_tasks` read; as
        :meth:`~workers.store.RunStore.finish_and_release_many`'s (the tasks' writes were
        committed asynchronously).
        """
        base = {"run_id": run_id, "checkpoint_id": checkpoint_id}
        rows = [
            {
                **base,
                "task_id": tid,
                "worker": worker,
                "error": json.dumps(dict(e)) if e is not None else None,
            }
            for tid, e in outcomes.items()
        ]
        with self.db.session("complete_tasks", transaction=True) as s:
            if epoch is not None:
                s.all("check_epoch", {"epoch": epoch})
            done = {r["task_id"] for found in s.many("complete_task", rows) for r in found}
            if not done:
                return 0, -1  # other deliveries completed them: their events are the ones kept
            row = one(s.all("count_down_step", {**base, "done": len(done)}))
            kept = [e for t in outcomes if t in done for e in events.get(t, ())]
            if kept:
                s.all("lock_run_events", base)  # numbered in commit order
                s.many("add_event", self._event_rows(run_id, kept), returning=False)
        return len(done), int(row["open_tasks"]) if row else 0

    def release_claims(
        self, run_id: str, checkpoint_id: str, task_ids: Sequence[str], worker: str
    ) -> None:
        """Free ``worker``'s claims on open tasks (a job giving up, to be retried anywhere)."""
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_ids": list(task_ids),
            "worker": worker,
        }
        self._all("release_claims", params)

    def hold_for_retry(
        self, run_id: str, checkpoint_id: str, task_id: str, attempts: int, hold: float
    ) -> None:
        """Release a failed task's claim; nobody re-sends it for ``hold`` seconds."""
        params = {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "task_id": task_id,
            "attempts": attempts,
            "hold": hold,
        }
        self._all("hold_for_retry", params)

    # --- the sweeper ---------------------------------------------------------------------

    def orphaned_tasks(self, stale: float, unclaimed: float, limit: int) -> list[OrphanTask]:
        """Open tasks claimed by dead workers or unclaimed for ``unclaimed`` s; re-dispatched."""
        rows = self._all("orphaned_tasks", {"stale": stale, "unclaimed": unclaimed, "limit": limit})
        return [
            OrphanTask(
                run_id=str(r["run_id"]),
                thread_id=r["thread_id"],
                checkpoint_id=r["checkpoint_id"],
                task_id=r["task_id"],
                path=tuple(r["task_path"]),
                retry_attempts=r["retry_attempts"],
                resends=r["attempts"],
            )
            for r in rows
            if r["task_path"] is not None
        ]

    def stalled_runs(self, stale: float, idle: float, limit: int) -> list[str]:
        """Oldest runs of their threads that nothing advances; marked as nudged."""
        rows = self._all("stalled_runs", {"stale": stale, "idle": idle, "limit": limit})
        return [str(r["run_id"]) for r in rows]

    # --- events --------------------------------------------------------------------------

    def add_events(self, run_id: str, chunks: Sequence[EventRow]) -> None:
        if chunks:
            with self.db.session("add_events") as s:
                s.many("add_event", self._event_rows(run_id, chunks), returning=False)

    def append_events(self, run_id: str, chunks: Sequence[EventRow]) -> None:
        """Keep a batch of a run's chunks while its node runs (its tokens), in one
        statement, in order; batches of one run commit in the order they are numbered."""
        if not chunks:
            return
        rows = self._event_rows(run_id, chunks)
        params = {
            "run_id": run_id,
            "ns": [r["ns"] for r in rows],
            "modes": [r["mode"] for r in rows],
            "types": [r["payload_type"] for r in rows],
            "payloads": [r["payload"] for r in rows],
        }
        self._all("append_events", params)

    def _event_rows(self, run_id: str, chunks: Sequence[EventRow]) -> list[Row]:
        rows = []
        for ns, mode, payload in chunks:
            payload_type, data = self.serde.dumps_typed(payload)
            rows.append(
                {
                    "run_id": run_id,
                    "ns": "|".join(ns),
                    "mode": mode,
                    "payload_type": payload_type,
                    "payload": data,
                }
            )
        return rows

    def events_after(self, run_id: str, after: int) -> list[Event]:
        rows = self._all("events_after", {"run_id": run_id, "after": after})
        return [
            Event(
                seq=r["seq"],
                ns=tuple(r["ns"].split("|")) if r["ns"] else (),
                mode=r["mode"],
                payload=self._load(r["payload_type"], r["payload"]),
            )
            for r in rows
        ]
