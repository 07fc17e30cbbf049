"""The run table as the queue, the broker as the wake-up: a free coordinator job drains.

A coordinator job, once its message's runs are done, takes the runs still queued in
Postgres (``claim_queued_runs``: of the graphs it serves, first in line on threads no
live worker holds, claimed in the same statement, skipping rows another job is taking)
and advances them in batches, as a message naming them would. While it
does, it keeps a Redis flag per graph raised (:class:`DrainFlag`), and a client that
queues a single run skips its coordinator message when the flag of the run's graph is
up: under load, single submits batch by themselves and pay no broker message.

No run is stranded, because of the order on both sides:

* the client commits its run, then reads the flag (no message only if it is up);
* the drainer lowers the flag, then looks at the table one last time, and takes what
  it finds (or hands it back as messages, when its time is up).

A client that saw the flag up saw it before the drainer that raised it lowered it, so
that drainer's last look comes after the run was committed. The flag expires after
:data:`FLAG_TTL` seconds unless raised again (each batch raises it): a drainer that is
killed holds it no longer than that. Its message is redelivered (late acks) and that
job drains again; a run queued meanwhile without a message is otherwise found by the
sweeper as a stalled run.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from workers.context import WorkerContext
from workers.dispatch import Broker
from workers.settings import Settings
from workers.store import Claim

log = logging.getLogger(__name__)

FLAG_TTL = 2.0
"""Seconds a raised flag lasts unless raised again."""

DRAIN_SECONDS = 5.0
"""Seconds a job goes on taking queued runs; what is left then goes out as messages."""


class Coordinate(Protocol):
    """:func:`workers.coordinator.coordinate_many`: advance runs already claimed."""

    def __call__(
        self, ctx: WorkerContext, run_ids: Sequence[str], claims: Sequence[Claim] | None = ...
    ) -> list[str]: ...


class DrainFlag:
    """Redis keys, one per graph and coordinator queue: a job is taking queued runs."""

    def __init__(self, redis: Any, queue: str) -> None:
        self.redis = redis
        self.queue = queue

    def key(self, graph: str) -> str:
        return f"graphruntime:draining:{self.queue}:{graph}"

    def up(self, graph: str) -> bool:
        """Whether a job drains ``graph``'s runs now; False when Redis cannot say."""
        try:
            return bool(self.redis.exists(self.key(graph)))
        except Exception as exc:  # noqa: BLE001 - the caller sends its message then
            log.debug("reading the drain flag failed: %s", exc)
            return False

    def raise_(self, graphs: Sequence[str]) -> None:
        ttl = int(FLAG_TTL * 1000)
        if len(graphs) == 1:  # most workers serve one graph: no pipeline object
            self.redis.set(self.key(graphs[0]), "1", px=ttl)
            return
        pipe = self.redis.pipeline(transaction=False)
        for graph in graphs:
            pipe.set(self.key(graph), "1", px=ttl)
        pipe.execute()

    def lower(self, graphs: Sequence[str]) -> None:
        self.redis.delete(*[self.key(graph) for graph in graphs])


def drain_flag(broker: Broker, settings: Settings) -> DrainFlag | None:
    """The broker's drain flag; None for a broker without Redis (no job drains then)."""
    redis = getattr(broker, "redis", None)
    return None if redis is None else DrainFlag(redis, settings.coordinator_queue)


def drain(
    ctx: WorkerContext,
    coordinate: Coordinate,
    flag: DrainFlag | None = None,
    *,
    when_idle: bool = False,
) -> list[str]:
    """Take the runs queued in the table until none is left (or :data:`DRAIN_SECONDS`),
    up to ``coordinate_batch`` at a time, each batch claimed in one statement and advanced
    with ``coordinate`` (the coordinator's :func:`~workers.coordinator.coordinate_many`);
    the failures it reports.

    Only while coordinator messages wait on the broker (load: runs queue up behind the
    workers), unless ``when_idle``: otherwise every run has its message and a worker
    free for it, and the job ends on one Redis read. Whether a job drains or not decides
    nothing about runs without a message: those are the last look's of the job whose
    flag their client saw. One statement when nothing is queued, the flag not touched.
    """
    flag = flag if flag is not None else drain_flag(ctx.broker, ctx.settings)
    graphs = ctx.registry.names()
    if flag is None or not graphs:
        return []
    if not when_idle and ctx.broker.queue_depths().coordinator == 0:
        return []
    seen: set[str] = set()  # runs handed back (a budget) go to other workers, not here again
    raised = [-FLAG_TTL]  # when the flag was last raised (monotonic)

    def take() -> list[Claim]:
        ctx.job_token = uuid.uuid4().hex
        claims = ctx.store.claim_queued_runs(
            graphs,
            ctx.worker_name,
            ctx.stale,
            ctx.job_token,
            skip=sorted(seen),
            limit=ctx.settings.coordinate_batch,
        )
        if not claims:
            ctx.job_token = None
        return claims

    def keep_up() -> None:  # raised again only when half its time has gone
        now = time.monotonic()
        if now - raised[0] > FLAG_TTL / 2:
            flag.raise_(graphs)
            raised[0] = now

    claims = take()
    if not claims:
        return []
    failures: list[str] = []
    give_up = time.monotonic() + DRAIN_SECONDS
    while True:
        try:
            keep_up()
            while claims:
                run_ids = [c.run.run_id for c in claims if c.run is not None]
                seen.update(run_ids)
                failures += coordinate(ctx, run_ids, claims)
                if time.monotonic() >= give_up:
                    break
                keep_up()  # before the claim: a run a client queues after it is ours
                claims = take()
        finally:
            flag.lower(graphs)
            raised[0] = -FLAG_TTL
        claims = take()  # the last look, after lowering: a client that saw the flag is here
        if not claims:
            return failures
        if time.monotonic() >= give_up:
            _hand_back(ctx, claims)
            return failures


def _hand_back(ctx: WorkerContext, claims: Sequence[Claim]) -> None:
    """Give claimed runs back to any worker: queued again, their threads freed, and
    coordinator messages sent for them."""
    runs = [c.run for c in claims if c.run is not None]
    run_ids = [run.run_id for run in runs]
    ctx.store.finish_and_release_many(
        [], worker=ctx.worker_name, free=[run.thread_id for run in runs], requeue=run_ids
    )
    ctx.job_token = None
    ctx.broker.send_coordinates(run_ids, per_message=ctx.settings.coordinate_batch)
