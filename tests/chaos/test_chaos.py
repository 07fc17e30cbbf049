"""Chaos: a workload of approval threads on a private cluster with faults injected.

Workload: client threads sharing ONE ``GraphClient`` each run threads of the chaos graph
(a fan-out, a join, a human approval, a last step): start, wait for the pause, resume
(half through the client, half as JSON messages on the ops queue), wait for the end.
Every request carries an idempotency key, so a client retries after an outage without
doing the work twice, as a careful caller would.

Faults, one every few seconds for ``CHAOS_SECONDS``: a worker SIGKILLed, a worker
SIGSTOPped past its heartbeat, Redis restarted (with its data, as deployed with AOF) and
wiped (every waiting message lost), Postgres restarted, task messages duplicated and
forged (another task's path), poison resume messages.

The check is the ledger in each thread's state: every node's entry exactly once.
``make test`` runs a short round; ``make chaos`` a long one (``CHAOS_SECONDS=600``).
The workers run with the default settings (heartbeats every 5 s).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis

from graphruntime.config import RunnableConfig
from graphruntime.types import Command
from tests.chaos.chaos_graphs import GRAPHS, expected_items
from tests.e2e.fault_graphs import redis_for
from tests.e2e.private_cluster import Private, private_cluster
from workers.app import CeleryBroker
from workers.errors import RunTimeoutError, is_transient
from workers.messages import TaskMessage, TaskRef
from workers.store import PostgresRunStore

pytestmark = pytest.mark.e2e

CHAOS_SECONDS = float(os.environ.get("CHAOS_SECONDS", "30"))
CLIENT_THREADS = int(os.environ.get("CHAOS_CLIENT_THREADS", "6"))
FAN_OUT = 4
DRAIN = 240.0  # seconds the workload may take to finish once the faults stop
POISON = "chaos-poison"


@dataclass
class Outcome:
    done: dict[str, list[str]] = field(default_factory=dict)  # thread -> final items
    failures: list[str] = field(default_factory=list)
    faults: Counter[str] = field(default_factory=Counter)
    current: dict[str, str] = field(default_factory=dict)  # client thread -> chaos thread
    lock: threading.Lock = field(default_factory=threading.Lock)


@pytest.fixture(scope="module")
def chaos() -> Iterator[Private]:
    with private_cluster({"GRAPHRUNTIME_GRAPHS": GRAPHS}, workers=3) as p:
        yield p


# Set once the test has stopped waiting for its client threads: one still retrying gives up.
ABANDONED = threading.Event()


def _retrying(deadline: float, action: Callable[[], Any]) -> Any:
    """Call ``action`` until it succeeds; outages of ours are waited out, not failures."""
    while True:
        try:
            return action()
        except Exception as exc:
            outage = isinstance(exc, RunTimeoutError | redis.exceptions.ConnectionError)
            if not (is_transient(exc) or outage):
                raise
            if time.monotonic() > deadline or ABANDONED.is_set():
                raise
            time.sleep(0.5)


def _one_thread(
    p: Private, deadline: float, via_queue: bool, outcome: Outcome
) -> tuple[str, list[str]]:
    client = p.client
    tid = f"chaos-{uuid.uuid4()}"
    with outcome.lock:
        outcome.current[threading.current_thread().name] = tid
    cfg: RunnableConfig = {"configurable": {"thread_id": tid}}

    def start() -> Any:
        handle = client.submit("chaos", {"n": FAN_OUT}, cfg, idempotency_key="start")
        return handle.wait(timeout=30)

    paused = _retrying(deadline, start)
    assert "__interrupt__" in paused, paused
    if via_queue:
        r = redis_for(str(client.settings.redis_url))
        raw = json.dumps(
            {"graph": "chaos", "thread_id": tid, "resume": "yes", "idempotency_key": "resume"}
        )

        def resumed() -> Any:
            runs = [x for x in client.store.runs_of_thread(tid) if x["kind"] == "resume"]
            if not runs:  # lost with a wiped Redis, or still waiting: push it again
                r.lpush(client.settings.resume_queue, raw)
                raise RunTimeoutError("resume not taken yet")
            return client.wait_done(str(runs[0]["run_id"]), 30)

        _retrying(deadline, resumed)
    else:

        def resume() -> Any:
            handle = client.submit("chaos", Command(resume="yes"), cfg, idempotency_key="resume")
            return handle.wait(timeout=30)

        _retrying(deadline, resume)
    values = _retrying(deadline, lambda: client.get_state("chaos", cfg).values)
    return tid, list(values["items"])


def _workload(p: Private, outcome: Outcome, stop: threading.Event, deadline: float) -> None:
    via_queue = False
    while not stop.is_set():
        via_queue = not via_queue
        try:
            tid, items = _one_thread(p, deadline, via_queue, outcome)
        except Exception as exc:  # noqa: BLE001 - collected and reported by the test
            with outcome.lock:
                outcome.failures.append(f"{type(exc).__name__}: {exc}")
            return
        with outcome.lock:
            outcome.done[tid] = items


def _diagnose(p: Private, threads: list[str]) -> str:
    """What the database and the workers' logs say about threads that did not finish."""
    assert isinstance(p.client.store, PostgresRunStore)
    lines = []
    with p.client.store.pool.connection() as conn:
        workers = conn.execute(
            "SELECT worker, heartbeat_at, now() - heartbeat_at AS age FROM graphruntime_workers"
        ).fetchall()
        lines.append(f"workers: {[(w['worker'], str(w['age'])) for w in workers]}")
        for tid in threads:
            lease = conn.execute(
                "SELECT lease_holder, leased_at FROM graphruntime_threads WHERE thread_id = %s",
                (tid,),
            ).fetchone()
            lines.append(f"thread {tid}: lease {lease}")
            for run in conn.execute(
                "SELECT run_id, kind, status, stop, created_at, updated_at, error "
                "FROM graphruntime_runs WHERE thread_id = %s ORDER BY created_at",
                (tid,),
            ).fetchall():
                lines.append(f"  run {run}")
                for task in conn.execute(
                    "SELECT * FROM graphruntime_step_tasks WHERE run_id = %s",
                    (run["run_id"],),
                ).fetchall():
                    lines.append(f"    task {task}")
                for w in p.cluster.workers:
                    lines.extend(
                        f"    log w{w.index}: {ln}"
                        for ln in list(w.log)
                        if str(run["run_id"]) in ln
                    )
    return "\n".join(lines)


def _dispatched(p: Private) -> list[dict[str, Any]]:
    assert isinstance(p.client.store, PostgresRunStore)
    with p.client.store.pool.connection() as conn:
        rows: list[dict[str, Any]] = conn.execute(
            "SELECT * FROM graphruntime_step_tasks WHERE status = 'dispatched' LIMIT 20"
        ).fetchall()
    return rows


def _message(row: dict[str, Any], path: Any = None) -> TaskMessage:
    return TaskMessage(
        run_id=str(row["run_id"]),
        thread_id=row["thread_id"],
        checkpoint_id=row["checkpoint_id"],
        tasks=(TaskRef(id=row["task_id"], path=tuple(path or row["task_path"])),),
    )


def _fault(p: Private, kind: str) -> None:
    cluster = p.cluster
    heartbeat = p.client.settings.heartbeat_interval
    if kind == "kill":
        index = random.randrange(len(cluster.workers))
        cluster.kill_worker(index)
        time.sleep(1.0)
        cluster.restart_worker(index)
    elif kind == "stop":
        worker = random.choice(cluster.workers)
        os.killpg(worker.pid, signal.SIGSTOP)
        try:
            time.sleep(2.5 * heartbeat)
        finally:
            os.killpg(worker.pid, signal.SIGCONT)
    elif kind == "redis":
        p.redis.restart(down=0.5)
    elif kind == "redis-wipe":
        p.redis.restart(down=0.5, wipe=True)
    elif kind == "postgres":
        p.restart_postgres()
    elif kind in ("duplicate", "forged"):
        broker = p.client.broker
        assert isinstance(broker, CeleryBroker)
        rows = _dispatched(p)
        if kind == "duplicate":
            broker.send_tasks([_message(row) for row in rows] * 3)
        elif len(rows) >= 2:
            broker.send_tasks(
                [_message(a, path=b["task_path"]) for a, b in itertools.pairwise(rows)]
            )
    elif kind == "poison":
        r = redis_for(str(p.client.settings.redis_url))
        queue = p.client.settings.resume_queue
        r.lpush(
            queue,
            f"{POISON} not json",
            json.dumps({"graph": "chaos", "thread_id": POISON, "resume": None}),
            json.dumps(
                {
                    "graph": "chaos",
                    "thread_id": POISON,
                    "resume": 1,
                    "idempotency_key": "k" * 10_000,
                }
            ),
        )


FAULTS = ("kill", "stop", "redis", "redis-wipe", "postgres", "duplicate", "forged", "poison")


@pytest.mark.timeout(CHAOS_SECONDS + DRAIN + 180)
def test_the_ledger_holds_every_write_exactly_once_under_faults(chaos: Private) -> None:
    p = chaos
    ABANDONED.clear()
    outcome = Outcome()
    stop = threading.Event()
    started = time.monotonic()
    deadline = started + CHAOS_SECONDS + DRAIN
    clients = [
        threading.Thread(target=_workload, args=(p, outcome, stop, deadline), daemon=True)
        for _ in range(CLIENT_THREADS)
    ]
    for t in clients:
        t.start()
    rng = random.Random(os.environ.get("CHAOS_SEED"))
    try:
        while time.monotonic() - started < CHAOS_SECONDS:
            time.sleep(rng.uniform(1.0, 4.0))
            kind = rng.choice(FAULTS)
            _fault(p, kind)
            outcome.faults[kind] += 1
    finally:
        stop.set()
        for worker in p.cluster.workers:  # nothing stays stopped
            if worker.proc.poll() is None:
                os.killpg(worker.pid, signal.SIGCONT)
        for index, worker in enumerate(list(p.cluster.workers)):
            if worker.proc.poll() is not None:
                p.cluster.restart_worker(index)
        for t in clients:
            t.join(timeout=max(1.0, deadline - time.monotonic()))
    stuck = [outcome.current[t.name] for t in clients if t.is_alive()]
    diagnosis = _diagnose(p, stuck) if stuck else ""
    ABANDONED.set()
    assert not stuck, "the workload did not finish in time:\n" + diagnosis
    assert outcome.failures == [], outcome.failures
    assert outcome.done, "no thread finished"
    expected = Counter(expected_items(FAN_OUT))
    wrong = {tid: items for tid, items in outcome.done.items() if Counter(items) != expected}
    assert wrong == {}, f"threads whose ledger lost or doubled a write: {wrong}"
    r = redis_for(str(p.client.settings.redis_url))
    dead = [json.loads(e) for e in r.lrange(f"{p.client.settings.resume_queue}:dead", 0, -1)]
    assert all(POISON in d["message"] for d in dead), [
        d for d in dead if POISON not in d["message"]
    ]
    print(  # the run's shape, for the record (pytest -s)
        f"chaos: {len(outcome.done)} threads, faults {dict(outcome.faults)}, "
        f"{time.monotonic() - started:.0f}s"
    )
