"""Approvals on real workers: deadlines raced by sweepers, bulk resume, cancel, the CLI."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from graphruntime.config import RunnableConfig
from tests.e2e.fault_graphs import redis_for
from tests.e2e.test_cli import _graphrun
from workers.client import GraphClient
from workers.context import WorkerContext
from workers.local_cluster import LocalCluster
from workers.sweeper import sweep_once


def _cfg(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def _until(check: Any, timeout: float = 60.0, what: str = "condition") -> Any:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _ledger(cluster: LocalCluster) -> Any:
    url = cluster.env["REDIS_URL"]
    return redis_for(url)


def test_three_sweepers_racing_one_deadline_give_one_resume(
    cluster: LocalCluster, client: GraphClient
) -> None:
    tid = f"e2e-deadline-{uuid.uuid4()}"
    out = client.invoke(
        "ticket", {"team": "ops", "ticket": "T-1", "within": 1.0}, _cfg(tid), timeout=60
    )
    assert "__interrupt__" in out
    # the two workers' sweepers run every 0.5 s; this test is the third, sweeping flat out
    me = WorkerContext(
        settings=client.settings,
        registry=client.registry,
        saver=client.saver,
        store=client.store,
        broker=client.broker,
        worker_name=f"test-sweeper-{uuid.uuid4().hex[:6]}",
    )
    stop = threading.Event()
    made: list[int] = []

    def sweep() -> None:
        while not stop.is_set():
            made.append(sweep_once(me).deadlines)

    sweeper = threading.Thread(target=sweep, daemon=True)
    sweeper.start()
    try:
        state = _until(
            lambda: (s := client.get_state("ticket", _cfg(tid))).values.get("decision") and s,
            what="the deadline's resume",
        )
    finally:
        stop.set()
        sweeper.join(timeout=30)
    assert state.values["decision"] == "auto-approved"
    time.sleep(1.5)  # three more sweeps each: nothing else may happen
    records = client.resume_history("ticket", _cfg(tid))
    assert [(r.route, r.actor, r.status) for r in records] == [("deadline", "deadline", "success")]
    assert int(_ledger(cluster).get(f"e2e:ticket:{tid}")) == 2  # the ask, and one resume
    assert not [w for w in client.inbox("ticket").items if w.thread_id == tid]


def test_a_bulk_resume_run_twice_applies_once(cluster: LocalCluster, client: GraphClient) -> None:
    team = f"team-{uuid.uuid4().hex[:8]}"
    tids = [f"e2e-bulk-{uuid.uuid4()}" for _ in range(6)]
    handles = [
        client.submit("ticket", {"team": team, "ticket": f"T-{i}"}, _cfg(t))
        for i, t in enumerate(tids)
    ]
    for h in handles:
        h.wait(timeout=60)
    page = client.inbox("ticket", where={"team": team})
    assert sorted(w.thread_id for w in page.items) == sorted(tids)
    first = client.resume_many("ticket", where={"team": team}, value="yes", idempotency_key=team)
    again = client.resume_many("ticket", where={"team": team}, value="yes", idempotency_key=team)
    assert sorted(o.thread_id for o in first) == sorted(tids)
    assert {o.outcome for o in first} == {"applied"}
    assert {o.outcome for o in again} == {"already applied"}
    for o in first:
        assert o.run_id is not None
        client.wait_done(o.run_id, timeout=60)
    third = client.resume_many("ticket", where={"team": team}, value="yes", idempotency_key=team)
    assert {o.outcome for o in third} == {"already applied"}
    ledger = _ledger(cluster)
    for t in tids:
        assert client.get_state("ticket", _cfg(t)).values["decision"] == "yes"
        assert int(ledger.get(f"e2e:ticket:{t}")) == 2
    assert client.inbox("ticket", where={"team": team}).items == []


def test_cancel_during_a_fan_out_leaves_no_task_writing(
    cluster: LocalCluster, client: GraphClient
) -> None:
    tid = f"e2e-cancel-{uuid.uuid4()}"
    ledger = _ledger(cluster)
    handle = client.submit("slowfan", {"n": 4}, _cfg(tid))
    # both workers (concurrency 1) hold a task; the other two wait in the queue
    _until(lambda: ledger.llen(f"e2e:slow:{tid}:started") >= 2, what="tasks to start")
    # the two running nodes started before: not waited for (their writes are refused)
    ended = client.cancel("slowfan", _cfg(tid), reason="wrong batch", actor="ops", wait=0)
    assert ended == [handle.run_id]
    before = client.get_state("slowfan", _cfg(tid))
    ledger.rpush(f"e2e:slow:{tid}:gate", *range(8))  # the running tasks finish now
    _until(
        lambda: ledger.llen(f"e2e:slow:{tid}:finished") >= ledger.llen(f"e2e:slow:{tid}:started"),
        what="the running tasks to return",
    )
    time.sleep(2.0)  # what a late job would write, it writes in this time
    after = client.get_state("slowfan", _cfg(tid))
    assert after.config == before.config  # no checkpoint after the cancel's
    assert after.next == ()
    assert after.metadata is not None
    assert after.metadata["cancelled"]["reason"] == "wrong batch"
    assert not any(i.startswith("w") for i in after.values.get("items", []))
    assert ledger.get(f"e2e:slow:{tid}:join") is None
    run = client.store.get_run(handle.run_id)
    assert run is not None
    assert run.status == "cancelled"
    # the thread takes new work afterwards
    ledger.rpush(f"e2e:slow:{tid}:gate", *range(8))
    out = client.invoke("slowfan", {"n": 1}, _cfg(tid), timeout=60)
    assert out["decision"] == "joined"


def test_the_cli_lists_resumes_and_audits_the_inbox(
    cluster: LocalCluster, client: GraphClient
) -> None:
    team = f"cli-{uuid.uuid4().hex[:8]}"
    tids = [f"e2e-cli-{uuid.uuid4()}" for _ in range(3)]
    for i, t in enumerate(tids):
        client.invoke("ticket", {"team": team, "ticket": f"T-{i}"}, _cfg(t), timeout=60)
    where = json.dumps({"team": team})
    listed = _graphrun(cluster, "inbox", "list", "--graph", "ticket", "--where", where, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted(r["thread_id"] for r in rows) == sorted(tids)
    assert {r["value"]["team"] for r in rows} == {team}
    args = ["inbox", "resume", "--graph", "ticket", "--where", where, "--value", '"ok"']
    args += ["--key", team, "--actor", "carol", "--note", "batch", "--json"]
    first = _graphrun(cluster, *args)
    assert first.returncode == 0, first.stderr
    outcomes = [json.loads(line) for line in first.stdout.splitlines()]
    assert sorted(o["outcome"] for o in outcomes) == ["applied"] * 3
    again = _graphrun(cluster, *args)
    assert [json.loads(x)["outcome"] for x in again.stdout.splitlines()] == ["already applied"] * 3
    for o in outcomes:
        client.wait_done(o["run_id"], timeout=60)
    history = _graphrun(cluster, "inbox", "history", "--graph", "ticket", "--thread", tids[0])
    assert history.returncode == 0, history.stderr
    assert "carol" in history.stdout
    assert "batch" in history.stdout
    table = _graphrun(cluster, "inbox", "list", "--graph", "ticket", "--where", where)
    assert table.returncode == 0
    assert tids[0] not in table.stdout
    bad = _graphrun(cluster, "inbox", "list", "--graph", "nope")
    assert bad.returncode == 1
    assert "nope" in bad.stderr
    # cancel from the CLI
    tid = f"e2e-cli-cancel-{uuid.uuid4()}"
    client.invoke("ticket", {"team": team, "ticket": "T-x"}, _cfg(tid), timeout=60)
    done = _graphrun(cluster, "cancel", "--graph", "ticket", "--thread", tid, "--reason", "dup")
    assert done.returncode == 0, done.stderr
    assert not [w for w in client.inbox("ticket").items if w.thread_id == tid]
