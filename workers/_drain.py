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
worker's **resident**: it keeps the flag raised and sleeps on a Redis wake-up list of its
own and the graphs' shared ones (``BLPOP``, the flag refreshed and the resident listed
among the sleepers in the same round trip). A client that finds the flag up wakes the
resident that went to sleep last, in the same round trip as its read
(:meth:`~workers._drain_flag.DrainFlag.wake`), or, none asleep, leaves a wake-up on the
shared list unless one is pending there. Woken, the resident claims and advances what it
claimed, its flag still up; then it sleeps again, and a wake-up left while it worked
wakes it at once (or another resident). A resident whose claim
was a full batch claims again before it sleeps (one pending wake-up may stand for more
runs than a batch), and hands half of that batch back as a coordinator message: it is
behind, and a free process takes those (and drains, or stays as its worker's
resident). At one run at a time, a run then costs no Celery message at all: no
publish, no delivery, prefork hand-off or ack, and no broker hop in its latency; under
load the residents take the runs in batches, still without messages. A host has a
resident per core and a worker at most one (Redis keys the resident refreshes,
which expire as the flag does if it is killed: workers/_drain_flag.py); only a worker
whose pool has two processes or more hosts one, so that task jobs always find a free
process; a resident leaves when it finds task messages waiting between its sleeps, and
after its time, as any drainer does (its last look after lowering). A job that stops
taking runs lowers the flag only if no other resident lives: one that does takes the
pending wake-ups. A resident killed after a client woke it takes that wake-up with it: the
run is found by the sweeper as a stalled run.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Sequence
from functools import cache
from typing import Protocol

from workers._drain_flag import FLAG_TTL, WAKE_POLL, DrainFlag
from workers.context import WorkerContext
from workers.dispatch import Broker
from workers.settings import Settings
from workers.store import Claim

log = logging.getLogger(__name__)

DRAIN_SECONDS = 5.0
"""Seconds a job goes on taking queued runs; what is left then goes out as messages."""

RESIDENT_SECONDS = 60.0
"""Seconds a resident stays at most. It leaves sooner when idle, when task messages wait,
or when its worker is shutting down (:meth:`DrainFlag.leave`): a warm shutdown waits for
it. Staying long keeps a resident in every worker: a new one starts only from a
coordinator message, and while another worker's resident keeps the flag up, none is sent."""

STAY_IDLE = 1.0
"""Seconds a resident waits for a run before it leaves."""

REFRESH = 0.25
"""Seconds after which a job that keeps the flag up raises it again (well within its
TTL: a flag lowered while a resident still works is up again this soon)."""


class Coordinate(Protocol):
    """:func:`workers.coordinator.coordinate_many`: advance runs already claimed."""

    def __call__(
        self, ctx: WorkerContext, run_ids: Sequence[str], claims: Sequence[Claim] | None = ...
    ) -> list[str]: ...


def drain_flag(broker: Broker, settings: Settings, home: str = "") -> DrainFlag | None:
    """The broker's drain flag; None for a broker without Redis (no job drains then).
    ``home``: the worker's node name; its host may have a resident per core."""
    redis = getattr(broker, "redis", None)
    if redis is None:
        return None
    host, slots = _host_slots() if home else ("", 1)
    return DrainFlag(redis, settings.coordinator_queue, home, host, slots)


@cache
def _host_slots() -> tuple[str, int]:
    """This host's name and how many residents it may have: one per core (under load a
    resident waits on its round's commits; another one works meanwhile)."""
    return socket.gethostname(), max(1, len(os.sched_getaffinity(0)))


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
    # the runs of this job's last claim (one it requeued is not taken here again at once)
    # and the last it handed back (they are another job's): a longer memory would cost
    # every claim, the list being a parameter
    last: list[str] = []
    handed: deque[str] = deque(maxlen=ctx.settings.coordinate_batch)
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
            skip=[*last, *handed],
            limit=ctx.settings.coordinate_batch,
        )
        if not claims:
            ctx.job_token = None
        else:  # kept through an empty claim: the last look after it skips them too
            last[:] = _run_ids(claims)
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
                    full = len(claims) >= ctx.settings.coordinate_batch
                    if stay is not None and full and len(claims) > 1:
                        # behind: half the batch goes out as a message, to a free process
                        # (which drains, or stays as its worker's resident)
                        half = len(claims) // 2
                        handed.extend(_run_ids(claims[half:]))
                        _hand_back(ctx, claims[half:], done=False)
                        claims = claims[:half]
                    run_ids = _run_ids(claims)
                    failures += coordinate(ctx, run_ids, claims)
                    idle_until = time.monotonic() + STAY_IDLE
                    if stay is not None and not full:
                        # a run queued meanwhile saw the flag up: its wake-up is pending
                        claims = []
                        continue
                elif stay is not None and may_wait(idle_until):
                    raised[0] = time.monotonic()
                    woken, leaving[0] = flag.sleep(graphs, stay, WAKE_POLL)  # flag raised too
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
            flag.lower(graphs, stay)
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
        kept[0] = -FLAG_TTL  # it goes on: listed again (lowering took it out) before it sleeps


def _hand_back(ctx: WorkerContext, claims: Sequence[Claim], *, done: bool = True) -> None:
    """Give claimed runs back to any worker: queued again, their threads freed, and
    coordinator messages sent for them; ``done``: the job holds no other claim now."""
    runs = [c.run for c in claims if c.run is not None]
    run_ids = [run.run_id for run in runs]
    ctx.store.finish_and_release_many(
        [], worker=ctx.worker_name, free=[run.thread_id for run in runs], requeue=run_ids
    )
    if done:
        ctx.job_token = None
    ctx.broker.send_coordinates(run_ids, per_message=ctx.settings.coordinate_batch)


def _run_ids(claims: Sequence[Claim]) -> list[str]:
    """The claimed runs' ids (a claim of an unknown run has none)."""
    return [c.run.run_id for c in claims if c.run is not None]
