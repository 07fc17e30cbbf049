"""Chaos: a workload of approval threads on a private cluster with faults injected.

The workload and the checks: tests/chaos/workload.py (the ledger: every node's entry
exactly once; every acknowledged request ran once; nothing left running or leased).

Faults, one every few seconds for ``CHAOS_SECONDS``: a worker SIGKILLed, a worker
SIGSTOPped past its heartbeat, Redis restarted (with its data, as deployed with AOF) and
wiped (every waiting message lost), Postgres restarted, task messages duplicated and
forged (another task's path), poison resume messages.

``make test`` runs a short round; ``make chaos`` a long one (``CHAOS_SECONDS=600``);
tests/chaos/test_crash.py is the crash mode (Postgres killed hard at chosen moments).
The workers run with the default settings (heartbeats every 5 s).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.chaos.chaos_graphs import GRAPHS
from tests.chaos.workload import DRAIN, POISON, SETTLE, run_with_faults
from tests.e2e.fault_graphs import redis_for
from tests.e2e.private_cluster import Private, private_cluster
from workers.app import CeleryBroker
from workers.messages import TaskMessage, TaskRef
from workers.store import PostgresRunStore

pytestmark = pytest.mark.e2e

CHAOS_SECONDS = float(os.environ.get("CHAOS_SECONDS", "30"))
CLIENT_THREADS = int(os.environ.get("CHAOS_CLIENT_THREADS", "6"))


@pytest.fixture(scope="module")
def chaos() -> Iterator[Private]:
    with private_cluster({"GRAPHRUNTIME_GRAPHS": GRAPHS}, workers=3) as p:
        yield p


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


FAULTS = (
    "kill",
    "stop",
    "redis",
    "redis-wipe",
    "postgres",
    "duplicate",
    "forged",
    "poison",
)


@pytest.mark.timeout(CHAOS_SECONDS + DRAIN + SETTLE + 180)
def test_the_ledger_holds_every_write_exactly_once_under_faults(chaos: Private) -> None:
    p = chaos
    rng = random.Random(os.environ.get("CHAOS_SEED"))

    def inject() -> str:
        kind = rng.choice(FAULTS)
        _fault(p, kind)
        return kind

    def restore() -> None:
        for worker in p.cluster.workers:  # nothing stays stopped
            if worker.proc.poll() is None:
                os.killpg(worker.pid, signal.SIGCONT)
        for index, worker in enumerate(list(p.cluster.workers)):
            if worker.proc.poll() is not None:
                p.cluster.restart_worker(index)

    outcome = run_with_faults(
        p, seconds=CHAOS_SECONDS, clients=CLIENT_THREADS, rng=rng, inject=inject, restore=restore
    )
    print(  # the run's shape, for the record (pytest -s)
        f"chaos: {len(outcome.done)} threads, faults {dict(outcome.faults)}, {outcome.seconds:.0f}s"
    )
