"""The run table as the queue, the broker as the wake-up: a free coordinator job drains.

A coordinator job, once its message's runs are done, takes the runs still queued in
Postgres (``queued_runs``: of the graphs it serves, first in line on threads no live
worker holds) and advances them in batches, as a message naming them would. While it
does, it keeps a Redis flag per graph raised (:class:`DrainFlag`), and a client that
queues a single run skips its coordinator message when the flag of the run's graph is
up: under load, single submits batch by themselves and pay no broker message.

No run is stranded, because of the order on both sides:

* the client commits its run, then reads the flag (no message only if it is up);
* the drainer lowers the flag, then looks at the table one last time, and takes what
  it finds (or sends it on as messages, when its time is up).

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
from collections.abc import Callable, Sequence
from typing import Any

from workers.context import WorkerContext
from workers.dispatch import Broker
from workers.settings import Settings

log = logging.getLogger(__name__)

FLAG_TTL = 2.0
"""Seconds a raised flag lasts unless raised again."""

DRAIN_SECONDS = 5.0
"""Seconds a job goes on taking queued runs; what is left then goes out as messages."""

Coordinate = Callable[[WorkerContext, Sequence[str]], list[str]]


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
        pipe = self.redis.pipeline(transaction=False)
        for graph in graphs:
            pipe.set(self.key(graph), "1", px=int(FLAG_TTL * 1000))
        pipe.execute()

    def lower(self, graphs: Sequence[str]) -> None:
        self.redis.delete(*[self.key(graph) for graph in graphs])


def drain_flag(broker: Broker, settings: Settings) -> DrainFlag | None:
    """The broker's drain flag; None for a broker without Redis (no job drains then)."""
    redis = getattr(broker, "redis", None)
    return None if redis is None else DrainFlag(redis, settings.coordinator_queue)


def drain(ctx: WorkerContext, coordinate: Coordinate, flag: DrainFlag | None = None) -> list[str]:
    """Take the runs queued in the table until none is left (or :data:`DRAIN_SECONDS`),
    ``coordinate_batch`` at a time, each batch with ``coordinate`` (the coordinator's
    :func:`~workers.coordinator.coordinate_many`); the failures it reports.

    One statement when nothing is queued, and the flag is not touched then.
    """
    flag = flag if flag is not None else drain_flag(ctx.broker, ctx.settings)
    graphs = ctx.registry.names()
    if flag is None or not graphs:
        return []
    seen: set[str] = set()  # taken once: a run left (a thread taken meanwhile) has a way on

    def look() -> list[str]:
        limit = ctx.settings.coordinate_batch
        return ctx.store.queued_runs(graphs, ctx.stale, sorted(seen), limit)

    found = look()
    if not found:
        return []
    failures: list[str] = []
    give_up = time.monotonic() + DRAIN_SECONDS
    while True:
        flag.raise_(graphs)
        try:
            while found and time.monotonic() < give_up:
                seen.update(found)
                failures += coordinate(ctx, found)
                flag.raise_(graphs)  # before the look: what comes after it is ours
                found = look()
        finally:
            flag.lower(graphs)
        found = look()  # the last look, after lowering: a client that saw the flag is here
        if not found:
            return failures
        if time.monotonic() >= give_up:
            ctx.broker.send_coordinates(found, per_message=ctx.settings.coordinate_batch)
            return failures
