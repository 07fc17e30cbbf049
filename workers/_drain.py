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
sweeper as a stalled run (or by the next resident, which its wake-up wakes).

A job that finds nothing to do can stay a while (:data:`STAY_IDLE` seconds without a
run, at most :data:`RESIDENT_SECONDS`, and not once its worker is shutting down) as its
worker's **resident**: it keeps the flag
raised and sleeps on a Redis wake-up list per graph (``BLPOP``, the flag refreshed in the
same round trip), and a client that finds the flag up pushes to it in the same round
trip as its read (:meth:`DrainFlag.wake`) when no wake-up is pending. Woken, it claims
and advances what it claimed, its flag still up; then it sleeps again, and a wake-up
pushed while it worked wakes it at once (or another resident). A resident whose claim
was a full batch claims again before it sleeps: one pending wake-up may stand for more
runs than a batch. At one run at a time, a run then costs no Celery message at all: no
publish, no delivery, prefork hand-off or ack, and no broker hop in its latency; under
load the residents take the runs in batches, still without messages. One resident per
worker (a Redis key per node, which the resident refreshes and which expires as the flag
does if it is killed); only a worker whose pool has two processes or more hosts one, so
that task jobs always find a free process; a resident leaves as soon as task messages
wait on the broker, and after its time, as any drainer does (flag down, then the last
look). The residents of a queue share its flag and wake-up lists: any of them may take
a wake-up, and one that leaves lowers the flag for a moment, the others raise it again
within :data:`REFRESH` seconds (messages go out meanwhile).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
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

RESIDENT_SECONDS = 60.0
"""Seconds a resident stays at most. It leaves sooner when idle, when task messages wait,
or when its worker is shutting down (:meth:`DrainFlag.leave`): a warm shutdown waits for
it. Staying long keeps a resident in every worker: a new one starts only from a
coordinator message, and while another worker's resident keeps the flag up, none is sent."""

STAY_IDLE = 1.0
"""Seconds a resident waits for a run before it leaves."""

WAKE_POLL = 0.25
"""Seconds a resident sleeps on its wake-up lists before it looks at the broker's task queue."""

REFRESH = 0.25
"""Seconds after which a job that keeps the flag up raises it again (its TTL is longer:
a flag another resident lowered on leaving is up again this soon)."""

SEEN_KEEP = 256
"""Runs a drainer remembers having taken (see ``skip`` of ``claim_queued_runs``)."""

# One round trip for a client: a wake-up if the flag is up and none is pending, else
# nothing (flag down: it sends its message). One pending wake-up is enough: the job
# that pops it claims after the pop, so it takes every run committed before the push
# check (a full batch's resident claims again); a run committed after the pop finds the
# list empty and pushes again.
_WAKE = """
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
if redis.call('llen', KEYS[2]) == 0 then
  redis.call('lpush', KEYS[2], '1')
end
return 1
"""

# the resident's key: refreshed, or freed, only by the job that holds it
_KEEP = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_FREE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""


class Coordinate(Protocol):
    """:func:`workers.coordinator.coordinate_many`: advance runs already claimed."""

    def __call__(
        self, ctx: WorkerContext, run_ids: Sequence[str], claims: Sequence[Claim] | None = ...
    ) -> list[str]: ...


class DrainFlag:
    """Redis keys, one per graph and coordinator queue: a job is taking queued runs."""

    def __init__(self, redis: Any, queue: str, home: str = "") -> None:
        self.redis = redis
        self.queue = queue
        self.home = home
        """The worker whose resident this job may be ("": one for the whole queue)."""

    def key(self, graph: str) -> str:
        return f"graphruntime:draining:{self.queue}:{graph}"

    def leaving_key(self) -> str:
        return f"graphruntime:leaving:{self.queue}:{self.home}"

    def leave(self) -> None:
        """:attr:`home` is shutting down: its resident leaves (within :data:`WAKE_POLL`
        seconds if it sleeps, after its batch if it works)."""
        self.redis.set(self.leaving_key(), "1", px=int(RESIDENT_SECONDS * 1000))

    def stay(self) -> None:
        """:attr:`home` starts: a mark of its last shutdown is gone."""
        self.redis.delete(self.leaving_key())

    def resident_key(self) -> str:
        """The key of :attr:`home`'s resident: one resident per worker."""
        suffix = f":{self.home}" if self.home else ""
        return f"graphruntime:resident:{self.queue}{suffix}"

    def hold(self, token: str) -> bool:
        """Become :attr:`home`'s resident, unless a live one is."""
        ttl = int(FLAG_TTL * 1000)
        return bool(self.redis.set(self.resident_key(), token, nx=True, px=ttl))

    def keep(self, token: str) -> bool:
        """Stay the resident a while longer; False if this job no longer is."""
        ttl = int(FLAG_TTL * 1000)
        return bool(self.redis.eval(_KEEP, 1, self.resident_key(), token, ttl))

    def free(self, token: str) -> None:
        self.redis.eval(_FREE, 1, self.resident_key(), token)

    def wake_key(self, graph: str) -> str:
        return f"graphruntime:wake:{self.queue}:{graph}"

    def wake(self, graph: str) -> bool:
        """Whether a job drains ``graph``'s runs now, waking a resident if one sleeps, in
        one round trip; False when Redis cannot say (the caller sends its message)."""
        try:
            woke = self.redis.eval(_WAKE, 2, self.key(graph), self.wake_key(graph))
        except Exception as exc:  # noqa: BLE001 - the caller sends its message then
            log.debug("reading the drain flag failed: %s", exc)
            return False
        return bool(woke)

    def sleep(self, graphs: Sequence[str], timeout: float) -> tuple[bool, bool]:
        """Wait up to ``timeout`` seconds for a client's wake-up (the claim that follows
        must come after it), the flags raised first, in the same round trip; whether one
        came, and whether :attr:`home` is shutting down."""
        pipe = self.redis.pipeline(transaction=False)
        self._raise(pipe, graphs)
        pipe.exists(self.leaving_key())
        pipe.blpop([self.wake_key(graph) for graph in graphs], timeout=timeout)
        *_, leaving, popped = pipe.execute()
        return popped is not None, bool(leaving)

    def raise_(self, graphs: Sequence[str], *, resident: bool = False) -> bool:
        """Raise the flags; with ``resident``, whether :attr:`home` is shutting down (read
        in the same round trip)."""
        if len(graphs) == 1 and not resident:  # a drainer of one graph: no pipeline object
            self.redis.set(self.key(graphs[0]), "1", px=int(FLAG_TTL * 1000))
            return False
        pipe = self.redis.pipeline(transaction=False)
        self._raise(pipe, graphs)
        if resident:
            pipe.exists(self.leaving_key())
        return resident and bool(pipe.execute()[-1])

    def _raise(self, pipe: Any, graphs: Sequence[str]) -> None:
        for graph in graphs:
            pipe.set(self.key(graph), "1", px=int(FLAG_TTL * 1000))

    def lower(self, graphs: Sequence[str]) -> None:
        """The flags down and their pending wake-ups dropped: the caller's claim that
        follows is the look those wake-ups asked for."""
        keys = [self.key(graph) for graph in graphs]
        self.redis.delete(*keys, *[self.wake_key(graph) for graph in graphs])


def drain_flag(broker: Broker, settings: Settings, home: str = "") -> DrainFlag | None:
    """The broker's drain flag; None for a broker without Redis (no job drains then)."""
    redis = getattr(broker, "redis", None)
    return None if redis is None else DrainFlag(redis, settings.coordinator_queue, home)


def drain(
    ctx: WorkerContext,
    coordinate: Coordinate,
    flag: DrainFlag | None = None,
    *,
    when_idle: bool = False,
    stay: bool = False,
    home: str = "",
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

    ``stay``: the job may stay as the resident of its worker, ``home`` (its node's
    name), if no live job is (see the module's docstring).
    """
    flag = flag if flag is not None else drain_flag(ctx.broker, ctx.settings, home)
    graphs = ctx.registry.names()
    if flag is None or not graphs:
        return []
    if stay:
        token = uuid.uuid4().hex
        if flag.hold(token):
            try:
                return _drain(ctx, coordinate, flag, graphs, stay=token)
            finally:
                flag.free(token)
    if not when_idle and ctx.broker.queue_depths().coordinator == 0:
        return []
    return _drain(ctx, coordinate, flag, graphs, stay=None)


def _drain(
    ctx: WorkerContext,
    coordinate: Coordinate,
    flag: DrainFlag,
    graphs: Sequence[str],
    *,
    stay: str | None,
) -> list[str]:
    """:func:`drain`'s loop; ``stay``: the resident's token, if the job is the resident."""
    # runs this job took lately: one handed back or requeued is not taken here again at once
    seen: deque[str] = deque(maxlen=SEEN_KEEP)
    raised = [-FLAG_TTL]  # when the flag was last raised (monotonic)
    looked = [-WAKE_POLL]  # when the broker's task queue was last read (monotonic)
    kept = [time.monotonic()]  # when the resident's key was last refreshed
    leaving = [False]  # the resident's worker is shutting down

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

    def keep_up() -> None:  # raised again only after REFRESH seconds
        now = time.monotonic()
        if now - raised[0] > REFRESH:
            if flag.raise_(graphs, resident=stay is not None):
                leaving[0] = True
            raised[0] = now

    def may_wait(idle_until: float) -> bool:  # a resident leaves the process to task jobs
        now = time.monotonic()
        if stay is None or now >= idle_until:
            return False
        if now - kept[0] > FLAG_TTL / 2:  # refreshed as the flag is
            if not flag.keep(stay):
                return False  # its key expired (a long batch): another job may hold it
            kept[0] = now
        if now - looked[0] >= WAKE_POLL:
            looked[0] = now
            return ctx.broker.queue_depths().tasks == 0
        return True

    claims = take()
    if not claims and stay is None:
        return []
    failures: list[str] = []
    give_up = time.monotonic() + (DRAIN_SECONDS if stay is None else RESIDENT_SECONDS)

    def time_up() -> bool:
        return leaving[0] or time.monotonic() >= give_up

    while True:
        try:
            keep_up()
            idle_until = time.monotonic() + STAY_IDLE
            while True:
                if claims:
                    run_ids = _run_ids(claims)
                    seen.extend(run_ids)
                    failures += coordinate(ctx, run_ids, claims)
                    idle_until = time.monotonic() + STAY_IDLE
                    if stay is not None and len(claims) < ctx.settings.coordinate_batch:
                        # a run queued meanwhile saw the flag up: its wake-up is pending
                        claims = []
                        continue
                elif may_wait(idle_until):
                    raised[0] = time.monotonic()
                    woken, leaving[0] = flag.sleep(graphs, WAKE_POLL)  # the flag raised too
                    if not woken:
                        if time_up():
                            break
                        continue  # no wake-up, nothing for it: a run's client pushes one
                else:
                    break
                if time_up():
                    break
                keep_up()  # before the claim: a run a client queues after it is ours
                claims = take()
        finally:
            flag.lower(graphs)
            raised[0] = -FLAG_TTL
        claims = take()  # the last look, after lowering: a client that saw the flag is here
        if not claims:
            return failures
        if time_up():
            if stay is None:
                _hand_back(ctx, claims)
            else:  # a resident's last look finds a run or two: advanced here, not sent again
                failures += coordinate(ctx, _run_ids(claims), claims)
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


def _run_ids(claims: Sequence[Claim]) -> list[str]:
    """The claimed runs' ids (a claim of an unknown run has none)."""
    return [c.run.run_id for c in claims if c.run is not None]
