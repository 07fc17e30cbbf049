"""Cancelling a thread: a barrier, made under the thread's lease.

A cancel is recorded as a run of its own (kind ``cancel``), which is the thread's next
run before any other. Whoever holds the thread's lease for it (the client that asked,
or a coordinator job) ends the thread's other queued and running runs in one
transaction (:func:`stop_runs`), waits for the nodes that live workers had started
before, and puts a checkpoint with nothing left to run (:func:`close_thread`, which
needs the graph's code). A run advanced under the lease before the cancel got it is
not cancelled: it ended first, and what it did stays.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphruntime.checkpoint import BaseCheckpointSaver, SerializerProtocol
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict
from graphruntime.pregel import Pregel
from graphruntime.pregel.driver import end_pending
from workers._retrying import CHECKPOINT_RACE
from workers.errors import InvalidRequestError
from workers.messages import MAX_NOTE
from workers.store import CancelRequest, NewRun, Run, RunningTask, RunPayload, RunStore

CANCEL_TASK_WAIT = CancelRequest.wait
"""Seconds a cancel waits, by default, for nodes that live workers started before it."""

MAX_CANCEL_WAIT = 3600.0
"""Longest a cancel may wait for those nodes."""


@dataclass(frozen=True)
class Stopped:
    """What a cancel stopped: runs ended as cancelled, and the tasks of theirs that
    live workers still ran when it stopped waiting (their writes are refused)."""

    cancelled: list[str]
    still_running: list[RunningTask]

    def result(self) -> dict[str, Any]:
        """The cancel run's result."""
        return {
            "cancelled": self.cancelled,
            "still_running": [t.task_id for t in self.still_running],
        }


def cancel_request(
    graph: str,
    thread_id: str,
    serde: SerializerProtocol,
    *,
    reason: str,
    actor: str | None,
    route: str,
    wait: float,
) -> NewRun:
    """The cancel run of a thread; ``wait``: seconds to wait for running nodes."""
    if not reason or len(reason) > MAX_NOTE:
        raise InvalidRequestError(f"reason must be 1 to {MAX_NOTE} characters")
    if not 0 <= wait <= MAX_CANCEL_WAIT:
        raise InvalidRequestError(f"wait must be 0 to {MAX_CANCEL_WAIT:.0f} seconds, got {wait}")
    origin: dict[str, Any] = {"route": route, "note": reason}
    if actor is not None:
        origin["actor"] = actor
    payload = RunPayload(
        config={"configurable": {"thread_id": thread_id}},
        cancel=CancelRequest(reason, actor, wait),
    )
    return NewRun.of(graph, thread_id, payload, serde, origin=origin)


def stop_runs(
    store: RunStore, run: Run, stale: float, beat: Callable[[], object] = lambda: None
) -> Stopped:
    """End the thread's other runs (held lease required), then wait for the nodes live
    workers had started, up to the cancel's ``wait``; ``beat`` keeps the lease holder
    alive meanwhile. Safe to do twice: the second time there is nothing left to end."""
    request = run.payload.cancel or CancelRequest("")
    reason = request.reason
    error = {
        "type": "RunCancelled",
        "module": "workers.errors",
        "message": f"Cancelled: {reason}",
        "args": [f"Cancelled: {reason}"],
        "actor": request.actor,
        "cancel_run": run.run_id,
    }
    cancelled = store.cancel_thread(run.thread_id, error, cancel_run=run.run_id, stale=stale)
    running = store.running_cancelled_tasks(cancelled, stale) if cancelled else []
    give_up = time.monotonic() + request.wait
    delay = 0.01
    while running and time.monotonic() < give_up:
        time.sleep(delay)
        delay = min(2 * delay, 0.5)
        beat()
        running = store.running_cancelled_tasks(cancelled, stale)
    return Stopped(cancelled, running)


def close_thread(graph: Pregel, saver: BaseCheckpointSaver, run: Run, stopped: Stopped) -> None:
    """Put, after the thread's head, a checkpoint with nothing left to run, whose
    metadata says who cancelled, why, and which runs (``saver`` fenced)."""
    request = run.payload.cancel
    note = {
        "reason": request.reason if request else None,
        "actor": request.actor if request else None,
        "runs": stopped.cancelled,
    }
    pinned: RunnableConfig = {"configurable": {"thread_id": run.thread_id}}
    CHECKPOINT_RACE.call(lambda: end_pending(graph, saver, pinned, {"cancelled": note}), _lost_race)


def _lost_race(exc: BaseException) -> bool:
    return isinstance(exc, CheckpointConflict)
