"""Hardening on real workers: shared clients, forged and copied messages, stopped and
long-running workers, values the workers could not read back, threads bound to a graph.

Each check is a ledger: every node records its executions, and the final state's
``operator.add`` list must hold each node's write exactly once.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from graphruntime.errors import SerializationError
from tests.e2e.fault_graphs import (
    Ledger,
    dead_letters,
    fault_config,
    in_process,
    ledger_chain_graph,
    ledger_fan_graph,
    redis_for,
    restore_workers,
    resume_message,
    thread_of,
    wait_until,
    worker_of,
)
from workers.app import CeleryBroker
from workers.client import GraphClient
from workers.local_cluster import LocalCluster
from workers.messages import TaskMessage, TaskRef
from workers.store import PostgresRunStore

FAN, CHAIN, APPROVAL = "ledger_fan", "ledger_chain", "ledger_approval"


@pytest.fixture(scope="module")
def ledger(cluster: LocalCluster) -> Ledger:
    return Ledger(cluster.env["DATABASE_URL"])


@pytest.fixture(autouse=True)
def healthy_cluster(cluster: LocalCluster, ledger: Ledger) -> Iterator[None]:
    yield
    ledger.release_tracked()
    for worker in cluster.workers:  # nothing stays stopped
        if worker.proc.poll() is None:
            os.killpg(worker.pid, signal.SIGCONT)
    restore_workers(cluster)


def _broker(client: GraphClient) -> CeleryBroker:
    assert isinstance(client.broker, CeleryBroker)
    return client.broker


def _step_rows(client: GraphClient, run_id: str) -> list[dict[str, Any]]:
    assert isinstance(client.store, PostgresRunStore)
    with client.store.pool.connection() as conn:
        rows: list[dict[str, Any]] = conn.execute(
            "SELECT * FROM graphruntime_step_tasks WHERE run_id = %s ORDER BY task_path::text",
            (run_id,),
        ).fetchall()
    return rows


def _message(row: dict[str, Any], path: Any = None) -> TaskMessage:
    return TaskMessage(
        run_id=str(row["run_id"]),
        thread_id=row["thread_id"],
        checkpoint_id=row["checkpoint_id"],
        tasks=(TaskRef(id=row["task_id"], path=tuple(path or row["task_path"])),),
    )


def _received(cluster: LocalCluster, task: str) -> int:
    return sum(
        f"Task {task}[" in line and "received" in line
        for w in cluster.workers
        for line in list(w.log)
    )


def assert_each_write_once(values: dict[str, Any], expected: dict[str, Any]) -> None:
    """The ledger check: no write missing, none applied twice."""
    assert Counter(values["items"]) == Counter(expected["items"]), values["items"]


def test_one_client_shared_by_32_threads(client: GraphClient, ledger: Ledger) -> None:
    """Every call borrows one pool connection at a time: no deadlock, no PoolTimeout."""
    errors: list[BaseException] = []
    outputs: list[Any] = []
    barrier = threading.Barrier(32)

    def hammer() -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(5):
                cfg = fault_config(ledger)
                outputs.append(client.invoke(CHAIN, {"items": []}, cfg, timeout=120))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == []
    assert len(outputs) == 160
    assert all(out["items"] == ["a", "b", "c"] for out in outputs)


def test_copies_of_a_running_job_never_run_its_node_twice(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
) -> None:
    cfg = fault_config(ledger, "work:0")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": 2}, cfg)
    ledger.wait_started(tid, "work:0")
    row = next(r for r in _step_rows(client, handle.run_id) if r["task_path"][1] == 0)
    copies = [_message(row)] * 100
    _broker(client).send_tasks(copies)
    wait_until(
        lambda: _received(cluster, "graphruntime.execute") >= 100,
        timeout=60,
        what="the copies to reach the workers",
    )
    ledger.release(tid, ["work:0"])
    out = handle.wait(60)
    oracle = in_process(ledger_fan_graph, [{"n": 2}], ledger)
    assert out == oracle["outputs"][0]
    assert ledger.counts(tid) == oracle["counts"]  # work:0 ran once
    assert_each_write_once(client.get_state(FAN, cfg).values, oracle["values"])


def test_a_forged_message_naming_another_tasks_path_changes_nothing(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
) -> None:
    """Run, checkpoint and task id kept, path swapped: it claims nothing, counts nothing."""
    cfg = fault_config(ledger, "work:0")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": 2}, cfg)
    ledger.wait_started(tid, "work:0")
    wait_until(lambda: ledger.counts(tid)["work:1"], timeout=20, what="work:1")
    rows = _step_rows(client, handle.run_id)
    first, second = rows[0], rows[1]
    forged = _message(first, path=second["task_path"])
    _broker(client).send_tasks([forged])
    wait_until(
        lambda: any(
            forged.job_id in line and "succeeded" in line
            for w in cluster.workers
            for line in list(w.log)
        ),
        timeout=30,
        what="the forged job to be handled",
    )
    assert {r["task_id"]: r["status"] for r in _step_rows(client, handle.run_id)}[
        first["task_id"]
    ] == "dispatched"  # not counted done by the forgery
    ledger.release(tid, ["work:0"])
    out = handle.wait(60)
    oracle = in_process(ledger_fan_graph, [{"n": 2}], ledger)
    assert out == oracle["outputs"][0]
    assert_each_write_once(client.get_state(FAN, cfg).values, oracle["values"])


def test_a_worker_stopped_past_its_heartbeat_is_replaced_and_its_late_work_is_ignored(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
) -> None:
    cfg = fault_config(ledger, "work:0")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": 2}, cfg)
    victim = worker_of(cluster.workers, ledger.wait_started(tid, "work:0"))
    os.killpg(cluster.workers[victim].pid, signal.SIGSTOP)
    try:
        ledger.release(tid, ["work:0"])  # the stopped process cannot see it
        # its heartbeat goes stale: the other worker re-runs work:0 and finishes the run
        out = handle.wait(60)
    finally:
        os.killpg(cluster.workers[victim].pid, signal.SIGCONT)
    oracle = in_process(ledger_fan_graph, [{"n": 2}], ledger)
    assert out == oracle["outputs"][0]
    wait_until(lambda: ledger.counts(tid)["work:0"] >= 2, timeout=20, what="the late node")
    assert_each_write_once(client.get_state(FAN, cfg).values, oracle["values"])
    assert client.store.get_run(handle.run_id).result == out


def test_a_long_inline_node_costs_no_extra_jobs(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
) -> None:
    """A node running for many heartbeats: its worker beats, so nothing is re-sent."""
    cfg = fault_config(ledger, "b")
    tid = thread_of(cfg)
    handle = client.submit(CHAIN, {"items": []}, cfg)
    ledger.wait_started(tid, "b")
    before = _received(cluster, "graphruntime.coordinate")
    time.sleep(6 * float(cluster.env["GRAPHRUNTIME_HEARTBEAT_INTERVAL"]))
    during = _received(cluster, "graphruntime.coordinate") - before
    ledger.release(tid, ["b"])
    out = handle.wait(60)
    assert during == 0, f"{during} coordinator jobs while one node ran"
    assert out == in_process(ledger_chain_graph, [{"items": []}], ledger)["outputs"][0]
    assert ledger.counts(tid)["b"] == 1


def test_a_value_of_a_class_only_the_client_knows_is_refused_before_anything_is_written(
    client: GraphClient, ledger: Ledger
) -> None:
    @dataclasses.dataclass
    class Doc:
        text: str

    cfg = fault_config(ledger)
    with pytest.raises(SerializationError, match="Nothing was queued"):
        client.invoke(CHAIN, {"items": [Doc("x")]}, cfg, timeout=10)
    assert client.store.runs_of_thread(thread_of(cfg)) == []


def test_a_thread_runs_under_the_graph_that_started_it(client: GraphClient, ledger: Ledger) -> None:
    cfg = fault_config(ledger)
    tid = thread_of(cfg)
    assert "__interrupt__" in client.invoke(APPROVAL, {"items": []}, cfg, timeout=30)
    r = redis_for(str(client.settings.redis_url))
    queue = client.settings.resume_queue
    raw = resume_message(CHAIN, tid, "yes", f"other-{uuid.uuid4()}")
    r.lpush(queue, raw)
    reason = wait_until(lambda: dead_letters(r, queue).get(raw), timeout=20, what="dead letter")
    assert reason.startswith("GraphMismatchError: Thread"), reason
    assert client.get_state(APPROVAL, cfg).interrupts  # still paused, unchanged
