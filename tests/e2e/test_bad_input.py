"""Bad input on real workers: a clear error, no state change, and the workers keep serving.

Each test ends by proving that both workers still serve: a fan-out whose two task jobs
are held at the same time, which needs two live worker processes.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError, InvalidUpdateError
from graphruntime.types import Command
from tests.e2e.fault_graphs import (
    Ledger,
    dead_letters,
    fault_config,
    in_process,
    ledger_approval_graph,
    ledger_chain_graph,
    ledger_fan_graph,
    pending_on,
    redis_for,
    restore_workers,
    resume_message,
    strip_interrupt_ids,
    thread_of,
    wait_until,
    worker_of,
)
from workers.app import CeleryBroker
from workers.client import GraphClient
from workers.errors import RunTimeoutError, ThreadBusyError, UnknownGraphError
from workers.heartbeat import Heartbeat
from workers.local_cluster import LocalCluster
from workers.store import NewRun, RunPayload

FAN, CHAIN, APPROVAL = "ledger_fan", "ledger_chain", "ledger_approval"


@pytest.fixture(scope="module")
def ledger(cluster: LocalCluster) -> Ledger:
    return Ledger(cluster.env["DATABASE_URL"])


@pytest.fixture(autouse=True)
def healthy_cluster(cluster: LocalCluster, ledger: Ledger) -> Iterator[None]:
    yield
    ledger.release_tracked()
    restore_workers(cluster)


@pytest.fixture
def resume_queue(client: GraphClient) -> tuple[Any, str]:
    return redis_for(str(client.settings.redis_url)), client.settings.resume_queue


def assert_cluster_serves(cluster: LocalCluster, client: GraphClient, ledger: Ledger) -> None:
    """Both workers are alive and each runs a task job of one fan-out, at the same time."""
    assert all(w.proc.poll() is None for w in cluster.workers), "a worker process died"
    cfg = fault_config(ledger, "work:0", "work:1")
    tid = thread_of(cfg)
    handle = client.submit(FAN, {"n": 2}, cfg)
    pids = [ledger.wait_started(tid, f"work:{i}", timeout=20) for i in range(2)]
    assert {worker_of(cluster.workers, pid) for pid in pids} == {0, 1}
    ledger.release(tid)
    assert handle.wait(30) == in_process(ledger_fan_graph, [{"n": 2}], ledger)["outputs"][0]


def _snapshot(client: GraphClient, graph: str, cfg: RunnableConfig) -> tuple[Any, ...]:
    """Everything a bad input must leave alone: state, pending interrupts, history, runs."""
    state = client.get_state(graph, cfg)
    return (
        state.values,
        state.next,
        [(i.id, i.value) for i in state.interrupts],
        len(list(client.get_state_history(graph, cfg))),
        # a refused resume is kept as an error run: the request, not a change to the thread
        [
            (str(r["run_id"]), r["status"])
            for r in client.store.runs_of_thread(thread_of(cfg))
            if r["status"] != "error"
        ],
    )


def _interrupted(client: GraphClient, ledger: Ledger) -> RunnableConfig:
    cfg = fault_config(ledger)
    out = client.invoke(APPROVAL, {"items": []}, cfg, timeout=30)
    assert "__interrupt__" in out
    return cfg


def _wait_dead(r: Any, queue: str, raws: list[str], timeout: float = 15) -> dict[str, str]:
    """Wait until every message in ``raws`` is on the dead-letter list; their reasons."""

    def landed() -> dict[str, str] | None:
        dead = dead_letters(r, queue)
        return {raw: dead[raw] for raw in raws} if all(raw in dead for raw in raws) else None

    try:
        found: dict[str, str] = wait_until(landed, timeout=timeout, what="dead letters")
    except AssertionError:
        dead = dead_letters(r, queue)
        missing = [raw for raw in raws if raw not in dead]
        stuck = [raw for raw in missing if pending_on(r, queue, raw)]
        raise AssertionError(
            f"not dead-lettered within {timeout}s: {missing}; still queued or being handled "
            f"(a listener crashed on it?): {stuck}"
        ) from None
    return found


def _resume_via_ops_applies(client: GraphClient, r: Any, queue: str, ledger: Ledger) -> None:
    """A good ops resume is still applied: the resume listeners keep serving."""
    cfg = _interrupted(client, ledger)
    r.lpush(queue, resume_message(APPROVAL, thread_of(cfg), "ok"))
    wait_until(
        lambda: client.get_state(APPROVAL, cfg).values.get("decision") == "ok",
        timeout=10,
        what="a valid ops resume to be applied after the bad ones",
    )


# --- unknown graph ------------------------------------------------------------------------


def test_unknown_graph_from_the_client(cluster: LocalCluster, client: GraphClient, ledger: Ledger):
    cfg = fault_config(ledger)
    with pytest.raises(UnknownGraphError, match=r"Unknown graph 'no-such-graph'.*GRAPHRUNTIME"):
        client.submit("no-such-graph", {"items": []}, cfg)
    with pytest.raises(UnknownGraphError):
        list(client.stream("no-such-graph", {"items": []}, cfg))
    assert client.store.runs_of_thread(thread_of(cfg)) == []  # nothing was queued
    assert client.get_state(CHAIN, cfg).values == {}
    assert_cluster_serves(cluster, client, ledger)


def test_unknown_graph_in_a_queued_run_is_left_for_a_worker_that_serves_it(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
):
    """A run naming a graph these workers do not serve but a live worker elsewhere does
    (a pool serving other graphs, a rolling deploy): it is not failed, and nothing is
    written, while it waits for a worker that has the graph
    (GRAPHRUNTIME_UNSERVED_GRAPH_TIMEOUT, unit-tested). Without any live worker that serves
    it, it fails at once (test_cli_truth.py)."""
    elsewhere = Heartbeat(
        client.store,
        f"elsewhere:{uuid.uuid4().hex[:8]}",
        0.5,
        node="elsewhere@h",
        graphs=["no-such-graph"],
    )
    elsewhere.start()  # a worker whose queue this cluster does not consume
    try:
        _left_for_a_worker_that_serves_it(cluster, client, ledger)
    finally:
        elsewhere.stop()


def _left_for_a_worker_that_serves_it(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
) -> None:
    cfg = fault_config(ledger)
    tid = thread_of(cfg)
    run, created = client.store.create_run(
        NewRun(
            run_id=str(uuid.uuid4()),
            thread_id=tid,
            graph="no-such-graph",
            kind="input",
            payload=RunPayload(input={"items": []}),
        )
    )
    assert created
    client.broker.send_coordinate(run.run_id)
    line = wait_until(
        lambda: next((ln for w in cluster.workers for ln in list(w.log) if run.run_id in ln), None),
        timeout=20,
        what="a worker to look at the run",
    )
    assert "does not serve; left for another worker" in line
    with pytest.raises(RunTimeoutError):
        client.wait_done(run.run_id, 8)  # offered again (past the 2 s staleness), never failed
    assert client.get_state(CHAIN, cfg).values == {}  # nothing was imported or written
    assert ledger.counts(tid) == {}
    client.store.finish_run(run.run_id, "cancelled", error={"type": "TestCleanup"})
    assert_cluster_serves(cluster, client, ledger)


def test_unknown_graph_on_the_ops_queue(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, resume_queue: tuple[Any, str]
):
    r, queue = resume_queue
    cfg = _interrupted(client, ledger)
    before = _snapshot(client, APPROVAL, cfg)
    raw = resume_message("no-such-graph", thread_of(cfg), "yes")
    r.lpush(queue, raw)
    reason = _wait_dead(r, queue, [raw])[raw]
    assert reason.startswith("UnknownGraphError: Unknown graph 'no-such-graph'"), reason
    assert _snapshot(client, APPROVAL, cfg) == before
    _resume_via_ops_applies(client, r, queue, ledger)
    assert_cluster_serves(cluster, client, ledger)


# --- malformed messages -------------------------------------------------------------------


def test_malformed_ops_resume_messages_are_dead_lettered(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, resume_queue: tuple[Any, str]
):
    r, queue = resume_queue
    cfg = _interrupted(client, ledger)
    tid = thread_of(cfg)
    before = _snapshot(client, APPROVAL, cfg)
    nonce = uuid.uuid4().hex
    good = {"graph": APPROVAL, "thread_id": tid, "resume": nonce}
    cases: list[tuple[str | bytes, str]] = [
        (f"not json {nonce}", "MalformedMessageError: Resume message is not JSON"),
        (b"\xff\xfe" + nonce.encode(), "MalformedMessageError: Resume message is not JSON"),
        (f'{{"graph": "{APPROVAL}", "thread_id": "{tid}", ', "is not JSON"),  # truncated
        (json.dumps([APPROVAL, tid, nonce]), "<root>: Input should be a valid dictionary"),
        (json.dumps({"graph": APPROVAL, "resume": nonce}), "thread_id: Field required"),
        (json.dumps({"graph": APPROVAL, "thread_id": tid}), "resume: Field required"),
        (json.dumps({**good, "graph": 7}), "graph: Input should be a valid string"),
        (json.dumps({**good, "thread_id": [tid]}), "thread_id: Input should be a valid string"),
        (json.dumps({**good, "idempotency_key": 5}), "idempotency_key: Input should be a valid"),
        (json.dumps({**good, "extra": 1}), "extra: Extra inputs are not permitted"),
        (json.dumps({**good, "v": 2}), "v: Input should be 1"),
        (json.dumps({**good, "thread_id": ""}), "thread_id"),
    ]
    for raw, _ in cases:
        r.lpush(queue, raw)
    decoded = [
        raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw for raw, _ in cases
    ]
    reasons = _wait_dead(r, queue, decoded)
    for text, (_, expected) in zip(decoded, cases, strict=True):
        assert expected in reasons[text], (text, reasons[text])
    assert _snapshot(client, APPROVAL, cfg) == before
    _resume_via_ops_applies(client, r, queue, ledger)
    assert_cluster_serves(cluster, client, ledger)


def test_ops_resume_message_with_a_nul_character_is_dead_lettered(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, resume_queue: tuple[Any, str]
):
    """A string Postgres cannot store (NUL) must be dead-lettered, not kill the listener.

    Two such messages: one per worker's listener, so a listener that dies on one leaves
    no other listener to serve the queue.
    """
    r, queue = resume_queue
    cfg = _interrupted(client, ledger)
    before = _snapshot(client, APPROVAL, cfg)
    raws = [
        resume_message(APPROVAL, f"{thread_of(cfg)}\x00{k}", "yes", key=f"nul-{uuid.uuid4()}")
        for k in range(2)
    ]
    try:
        r.lpush(queue, *raws)
        reasons = _wait_dead(r, queue, raws, timeout=5)
        for raw in raws:
            assert "thread_id" in reasons[raw] or "NUL" in reasons[raw], reasons[raw]
        assert _snapshot(client, APPROVAL, cfg) == before
        _resume_via_ops_applies(client, r, queue, ledger)
    finally:
        # poison messages must not be recovered by the restarted listeners
        for raw in raws:
            for name in [queue, *r.scan_iter(match=f"{queue}:processing:*")]:
                r.lrem(name, 0, raw)
        restore_workers(cluster, restart=range(len(cluster.workers)))
    assert_cluster_serves(cluster, client, ledger)


def test_malformed_celery_messages_are_dropped_and_logged(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
):
    broker = client.broker
    assert isinstance(broker, CeleryBroker)
    settings = broker.settings
    app = broker.app
    sent: dict[str, str] = {}  # celery task id -> what its worker must log

    def all_lines() -> list[str]:
        return [line for w in cluster.workers for line in list(w.log)]

    def anonymous(expect: str) -> bool:  # Celery logs these without the task id
        return expect.startswith(("Received unregistered", "Refusing"))

    baseline: dict[str, int] = {}

    def send(name: str, expect: str, queue: str, **options: Any) -> None:
        task_id = f"bad-{uuid.uuid4()}"
        if anonymous(expect):
            baseline[expect] = sum(expect in line for line in all_lines())
        app.send_task(name, queue=queue, task_id=task_id, **options)
        sent[task_id] = expect

    tasks, coord = settings.task_queue, settings.coordinator_queue
    send("graphruntime.execute", "dropping malformed task message", tasks, kwargs={"bogus": 1})
    send(
        "graphruntime.execute",
        "dropping malformed task message",
        tasks,
        kwargs={
            "run_id": "r",
            "thread_id": "t",
            "checkpoint_id": "c",
            "tasks": [{"id": "x", "path": {"not": "a path"}}],
        },
    )
    send("graphruntime.coordinate", "dropping malformed coordinate message", coord, kwargs={})
    send(
        "graphruntime.coordinate",
        "dropping malformed coordinate message",
        coord,
        kwargs={"run_id": 5, "v": 9},
    )
    send("graphruntime.execute", "raised unexpected: TypeError", tasks, args=[1, 2])
    send(
        "graphruntime.coordinate",
        "dropping coordinate message for unknown run",
        coord,
        kwargs={"run_id": str(uuid.uuid4()), "v": 1},
    )
    send(
        "graphruntime.no-such-task",
        "Received unregistered task of type 'graphruntime.no-such-task'",
        tasks,
        kwargs={},
    )
    send(
        "graphruntime.coordinate",
        "Refusing to deserialize untrusted content of type pickle",
        coord,
        kwargs={"run_id": str(uuid.uuid4()), "v": 1},
        serializer="pickle",
    )

    def logged(task_id: str, expect: str) -> bool:
        lines = all_lines()
        if anonymous(expect):
            return sum(expect in line for line in lines) > baseline[expect]
        at = [i for i, line in enumerate(lines) if task_id in line]
        return any(expect in line for i in at for line in lines[i : i + 3])

    for task_id, expect in sent.items():
        wait_until(
            lambda t=task_id, e=expect: logged(t, e), timeout=15, what=f"{task_id}: '{expect}'"
        )
    assert_cluster_serves(cluster, client, ledger)


# --- resumes that must be refused ---------------------------------------------------------


def test_resume_of_a_finished_thread_is_refused(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, resume_queue: tuple[Any, str]
):
    r, queue = resume_queue
    cfg = _interrupted(client, ledger)
    client.invoke(APPROVAL, Command(resume="yes"), cfg, timeout=30)
    before = _snapshot(client, APPROVAL, cfg)
    with pytest.raises(InvalidResumeError, match="no pending interrupt"):
        client.invoke(APPROVAL, Command(resume="again"), cfg, timeout=30)
    with pytest.raises(InvalidResumeError, match="no pending interrupt"):
        client.invoke(APPROVAL, Command(resume={"0" * 32: "again"}), cfg, timeout=30)
    raw = resume_message(APPROVAL, thread_of(cfg), "again")
    r.lpush(queue, raw)
    reason = _wait_dead(r, queue, [raw])[raw]
    assert reason.startswith("InvalidResumeError: Cannot resume thread"), reason
    assert _snapshot(client, APPROVAL, cfg) == before

    fresh = fault_config(ledger)  # a thread that never ran
    with pytest.raises(InvalidResumeError, match="no checkpoints"):
        client.submit(APPROVAL, Command(resume="yes"), fresh)
    assert client.store.runs_of_thread(thread_of(fresh)) == []
    assert_cluster_serves(cluster, client, ledger)


def test_resume_map_with_an_unknown_interrupt_id_is_refused(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, resume_queue: tuple[Any, str]
):
    r, queue = resume_queue
    cfg = _interrupted(client, ledger)
    tid = thread_of(cfg)
    before = _snapshot(client, APPROVAL, cfg)
    (pending,) = client.get_state(APPROVAL, cfg).interrupts
    unknown = "f" * 32 if pending.id != "f" * 32 else "e" * 32
    with pytest.raises(InvalidResumeError, match=f"Resume map key {unknown} matches no pending"):
        client.invoke(APPROVAL, Command(resume={unknown: "x"}), cfg, timeout=30)
    with pytest.raises(InvalidResumeError, match="matches no pending"):
        client.invoke(APPROVAL, Command(resume={pending.id: "x", unknown: "y"}), cfg, timeout=30)
    with pytest.raises(InvalidResumeError, match="names no interrupt"):
        client.invoke(APPROVAL, Command(resume={}), cfg, timeout=30)
    raw = resume_message(APPROVAL, tid, {unknown: "x"})
    r.lpush(queue, raw)
    reason = _wait_dead(r, queue, [raw])[raw]
    assert reason.startswith(f"UnknownInterruptError: Resume map key {unknown}"), reason
    assert _snapshot(client, APPROVAL, cfg) == before

    # the right id still resumes it, exactly as in-process
    out = client.invoke(APPROVAL, Command(resume={pending.id: "yes"}), cfg, timeout=30)
    oracle = in_process(ledger_approval_graph, [{"items": []}, Command(resume="yes")], ledger)
    assert strip_interrupt_ids(out) == strip_interrupt_ids(oracle["outputs"][1])
    assert ledger.counts(tid) == oracle["counts"]
    assert_cluster_serves(cluster, client, ledger)


def test_resume_while_a_run_is_in_flight_waits_its_turn_and_is_then_refused(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger, resume_queue: tuple[Any, str]
):
    """A resume sent while a run is in flight queues behind it and is checked when its
    turn comes: here the run finishes without pausing, so the resume is refused and
    changes nothing. Editing the state meanwhile is refused at once."""
    r, queue = resume_queue
    cfg = fault_config(ledger, "b")
    tid = thread_of(cfg)
    handle = client.submit(CHAIN, {"items": []}, cfg)
    ledger.wait_started(tid, "b")
    early = client.submit(CHAIN, Command(resume="x"), cfg)
    with pytest.raises(ThreadBusyError, match="run in flight"):
        client.update_state(CHAIN, cfg, {"items": ["sneaky"]})
    raw = resume_message(CHAIN, tid, "x", key=f"k-{uuid.uuid4()}")
    r.lpush(queue, raw)
    ledger.release(tid, ["b"])

    out = handle.wait(30)
    with pytest.raises(InvalidResumeError, match="no pending interrupt"):
        early.wait(30)
    # the ops message answers the same (future) pause as the queued resume: it conflicts
    reason = _wait_dead(r, queue, [raw])[raw]
    assert reason.startswith("ResumeConflictError: Thread"), reason
    oracle = in_process(ledger_chain_graph, [{"items": []}], ledger)
    assert out == oracle["outputs"][0]
    assert client.get_state(CHAIN, cfg).values == oracle["values"]
    assert ledger.counts(tid) == oracle["counts"]
    kinds = [(r["kind"], r["status"]) for r in client.store.runs_of_thread(tid)]
    assert kinds == [("resume", "error"), ("input", "success")]
    assert_cluster_serves(cluster, client, ledger)


def test_malformed_input_fails_as_in_process(
    cluster: LocalCluster, client: GraphClient, ledger: Ledger
):
    """An input the graph cannot take raises the in-process error; the thread ends the same."""
    cfg = fault_config(ledger)
    with pytest.raises(InvalidUpdateError, match="Expected dict, got 42") as remote:
        client.invoke(CHAIN, 42, cfg, timeout=30)
    local = ledger_chain_graph.with_checkpointer(InMemorySaver())
    local_cfg: RunnableConfig = {"configurable": {"thread_id": f"local-{uuid.uuid4()}"}}
    with pytest.raises(InvalidUpdateError) as expected:
        local.invoke(42, local_cfg)
    assert str(remote.value) == str(expected.value)
    assert client.get_state(CHAIN, cfg).values == local.get_state(local_cfg).values
    assert len(list(client.get_state_history(CHAIN, cfg))) == len(
        list(local.get_state_history(local_cfg))
    )
    assert ledger.counts(thread_of(cfg)) == {}
    assert_cluster_serves(cluster, client, ledger)
