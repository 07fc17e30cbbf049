"""A coordinator job's round: the thread leases it holds, and the ends of its runs.

The round's runs hold their saver requests (:class:`~workers._saves.RoundSaves`); when
every run of the round was advanced, they are stored together, then the runs' ends are
written with the leases they free, in one durable commit (:class:`Batch`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from graphruntime.errors import CheckpointConflict
from workers._retrying import patiently
from workers._saves import RoundSaves
from workers.context import WorkerContext
from workers.errors import (
    error_info,
)
from workers.store import Run, RunEnd, RunStatus, Wait

log = logging.getLogger(__name__)

RELEASE_PATIENCE = 60.0
"""Seconds a job keeps trying to free a thread's lease through an outage."""

_T = TypeVar("_T")


class Batch:
    """The thread leases a coordinator job's round holds, and the ends of its runs.

    The runs' checkpoints and writes, held as the loop made them (durability "async",
    :class:`~workers._saves.RoundSaves`), are stored together once every run of the
    round was advanced: one transaction, one round trip, committed lazily. Then the ends
    are written together, with the leases they free: one transaction, one durable
    commit. The WAL is flushed
    in order, so that commit also makes the checkpoints durable, all before the job is
    acked (late acks). No client sees a run of the round end before that commit. A
    crash before it loses the round's unstored checkpoints and its ends: the
    redelivered job (or the sweeper) redoes each run from its stored checkpoints, which
    every run is safe for.
    """

    def __init__(self, ctx: WorkerContext, failures: list[str], epoch: str | None) -> None:
        self.ctx = ctx
        self.failures = failures
        self.epoch = epoch
        """The server's epoch when the round claimed its runs: the ends and dispatches
        that make the round's asynchronous commits durable are refused if it changed."""
        self.leases: dict[str, Lease] = {}
        self.ends: list[tuple[RunEnd, Callable[[RunEnd], None]]] = []
        self.held = RoundSaves(ctx.saver)

    def take(self, thread_id: str) -> bool:
        """Hold the thread's lease (claimed) in this batch; False if it holds it already."""
        if thread_id in self.leases:
            return False
        self.leases[thread_id] = Lease(self, thread_id)
        return True

    def close(self, unstarted: Sequence[Run] = ()) -> list[str]:
        """End the runs that ended and free every lease still held, in one transaction;
        the thread's next run still to finish, per ended run that has one.

        ``unstarted``: claimed runs nothing was done for; those the claim marked running
        are queued again (a queued run's start decides, e.g., whether it travels in time).
        """
        ctx = self.ctx
        requeue = [run.run_id for run in unstarted if run.status == "queued"]
        redo: list[str] = []
        try:
            ends = self._store_checkpoints(redo)
            held = [t for t, lease in self.leases.items() if lease.held and not lease.ending]
            if not ends and not held:
                return []
            released = _patiently(
                lambda: ctx.store.finish_and_release_many(
                    [end for end, _ in ends],
                    worker=ctx.worker_name,
                    free=held,
                    requeue=requeue,
                    epoch=self.epoch,
                ),
                f"ending {len(ends)} runs",
            )
        except Exception:
            self._free_each()  # a lease left with this live worker would stall its thread
            raise
        for lease in self.leases.values():
            lease.held = False
        for run_id in redo:  # its thread moved on meanwhile: start over from where it is
            _send_again(ctx, run_id)
        following = []
        for (end, then), done in zip(ends, released, strict=False):
            if done.error is not None:
                # not ended: the sweeper finds it stalled and runs it again (it then
                # returns the state as its checkpoint saved it)
                log.error("run %s could not be ended: %s", end.run_id, done.error)
                self.failures.append(f"run {end.run_id}: {type(done.error).__name__}: {done.error}")
                continue
            then(end)
            if done.following is not None:
                following.append(done.following)
        return following

    def _store_checkpoints(self, redo: list[str]) -> list[tuple[RunEnd, Callable[[RunEnd], None]]]:
        """Store the checkpoints the ending runs held, all in one round trip; the ends to
        write. A run whose puts were refused (its thread moved under it) does not end:
        its id goes to ``redo``; one whose puts failed ends with that error."""
        ends, self.ends = self.ends, []
        self.held.store()
        kept = []
        for end, then in ends:
            error = self.held.error_of(end.run_id)
            if error is None:
                kept.append((end, then))
            elif isinstance(error, CheckpointConflict):
                log.warning("run %s: its checkpoints were refused (%s); re-sent", end.run_id, error)
                self.leases[end.thread_id].ending = False  # freed with the others
                redo.append(end.run_id)
            else:
                log.error("run %s: its checkpoints could not be stored: %s", end.run_id, error)
                self.failures.append(f"run {end.run_id}: {type(error).__name__}: {error}")
                failed = dataclasses.replace(
                    end, status="error", result=None, error=error_info(error), inbox=None
                )
                kept.append((failed, then))
        return kept

    def _free_each(self) -> None:
        for lease in self.leases.values():
            lease.ending = False
            try:
                lease.release()
            except Exception:  # the next lease still gets its chance
                log.exception("thread %s: its lease could not be freed", lease.thread_id)


class Lease:
    """A thread's lease as a coordinator job holds it: given up once, by the run's end
    (with the batch's other ends, in the same transaction) or by the job when the run
    did not end."""

    def __init__(self, batch: Batch, thread_id: str) -> None:
        self.batch = batch
        self.thread_id = thread_id
        self.held = True
        self.ending = False

    def finish(
        self,
        run: Run,
        status: RunStatus,
        result: Any,
        error: dict[str, Any] | None,
        inbox: Sequence[Wait] | None,
        then: Callable[[RunEnd], None],
    ) -> None:
        """End ``run`` and give the lease up when the batch closes, once its held
        checkpoints are stored; ``then`` once it ended."""
        end = RunEnd(run.run_id, self.thread_id, status, result, error, inbox)
        self.batch.ends.append((end, then))
        self.ending = True

    def release(self) -> None:
        """Give the lease up now, unless the run is ending (the batch frees it then).

        An outage is waited out (up to ``RELEASE_PATIENCE`` seconds): a lease left held
        by a live worker would keep every other job off the thread. A lease still not
        freed then is left to this process's heartbeat, which frees the leases no job of
        the process holds once it can.
        """
        if self.held and not self.ending:
            ctx = self.batch.ctx
            _patiently(
                lambda: ctx.store.release_thread(self.thread_id, ctx.worker_name),
                f"freeing thread {self.thread_id}'s lease",
            )
            self.held = False


def _patiently(call: Callable[[], _T], doing: str) -> _T:
    """``call()``, retried through an outage for up to ``RELEASE_PATIENCE`` seconds
    (``workers._retrying.RELEASE_OUTAGE``; a crash that took back what it was to make
    durable is not retried: the job is redone instead)."""
    return patiently(call, doing, within=RELEASE_PATIENCE)


def _send_again(ctx: WorkerContext, run_id: str) -> None:
    """Send the run again, after its lease holder's death would have shown."""
    ctx.broker.send_coordinate(run_id, delay=2 * ctx.settings.heartbeat_interval)
