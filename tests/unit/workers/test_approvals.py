"""The inbox, bulk resume, deadlines, cancel and the audit trail, on an in-memory cluster."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidResumeError, UnknownInterruptError
from graphruntime.graph import START, StateGraph
from graphruntime.types import Command, Send, interrupt
from tests.unit.workers.graphs import Calls, Log, fan, ticket
from workers.errors import (
    InvalidFilterError,
    InvalidRequestError,
    ThreadNotFoundError,
    UnknownGraphError,
)
from workers.store import InboxQuery, RunQuery
from workers.sweeper import sweep_once
from workers.testing import InlineCluster

MakeCluster = Callable[..., InlineCluster]


@pytest.fixture
def make_cluster() -> MakeCluster:
    """In-memory clusters; tests/integration runs the same tests on Postgres."""
    return InlineCluster


def thread(name: str | None = None) -> RunnableConfig:
    return {"configurable": {"thread_id": name or f"t-{uuid.uuid4()}"}}


def paused(cluster: InlineCluster, n: int, teams: tuple[str, ...] = ("ops", "sales")) -> list[str]:
    """``n`` threads of ``ticket`` waiting, teams in turn; their thread ids in order."""
    ids = []
    for i in range(n):
        cfg = thread(f"t{i:03d}")
        cluster.run("ticket", {"items": [teams[i % len(teams)], f"T-{i}"]}, cfg)
        cluster.clock.advance(1)
        ids.append(cfg["configurable"]["thread_id"])
    return ids


def test_the_inbox_lists_every_pending_wait_oldest_first_with_its_value(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    ids = paused(cluster, 3)
    page = cluster.client.inbox("ticket")
    assert [w.thread_id for w in page.items] == ids
    assert [w.value for w in page.items] == [
        {"team": "ops", "ticket": "T-0"},
        {"team": "sales", "ticket": "T-1"},
        {"team": "ops", "ticket": "T-2"},
    ]
    assert page.cursor is None
    state = cluster.client.get_state("ticket", thread("t001"))
    assert page.items[1].interrupt_id == state.interrupts[0].id
    assert {w.node for w in page.items} == {"ask"}


def test_inbox_filters_on_value_fields_and_node(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    ids = paused(cluster, 6)
    ops = cluster.client.inbox("ticket", where={"team": "ops"})
    assert [w.thread_id for w in ops.items] == ids[0::2]
    assert (
        cluster.client.inbox("ticket", where={"team": "ops", "ticket": "T-2"}).items[0].thread_id
        == ids[2]
    )
    assert cluster.client.inbox("ticket", node="other").items == []


def test_inbox_filters_on_age(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    ids = paused(cluster, 6)
    # six threads paused one clock second apart; the newest is 1 s old
    old = cluster.client.inbox("ticket", older_than=timedelta(seconds=3.5))
    assert [w.thread_id for w in old.items] == ids[:3]
    at = cluster.client.inbox("ticket").items[2].created_at
    assert [w.thread_id for w in cluster.client.inbox("ticket", older_than=at).items] == ids[:2]


def test_inbox_pages_with_a_cursor_cover_every_wait_once(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    ids = paused(cluster, 7)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = cluster.client.inbox("ticket", limit=3, cursor=cursor)
        seen.extend(w.thread_id for w in page.items)
        pages += 1
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == ids
    assert pages == 3


def test_inbox_refuses_bad_requests_with_a_clear_error(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    with pytest.raises(UnknownGraphError):
        cluster.client.inbox("nope")
    with pytest.raises(ValueError, match="cursor"):
        cluster.client.inbox("ticket", cursor="not-a-cursor")
    with pytest.raises(ValueError, match="limit"):
        cluster.client.inbox("ticket", limit=0)
    with pytest.raises(ValueError, match="aware"):
        cluster.client.inbox("ticket", older_than=datetime(2026, 1, 1))


def test_hostile_filters_are_refused_with_the_reason_before_any_query(
    make_cluster: MakeCluster,
) -> None:
    """NUL characters, a filter nested 5,000 deep, an age of a million years, a forged
    cursor: each an InvalidFilterError (a ValueError) naming the problem; never a
    RecursionError or a database error."""
    cluster = make_cluster({"ticket": ticket(Calls())})
    paused(cluster, 1)
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(5000):
        inner["x"] = {}
        inner = inner["x"]
    forged = base64.urlsafe_b64encode(
        json.dumps(["2026-01-01T00:00:00+00:00", "t\x00", "i"]).encode()
    ).decode()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"where": {"team": "o\x00ps"}}, "NUL"),
        ({"where": {"te\x00am": "ops"}}, "NUL"),
        ({"where": deep}, "deeper than"),
        ({"where": ["not", "an", "object"]}, "JSON object"),
        ({"where": {"x": "y" * 70_000}}, "limit"),
        ({"node": "ask\x00"}, "node"),
        ({"older_than": timedelta(days=999_999_999)}, "older_than"),
        ({"older_than": "7d"}, "older_than"),
        ({"cursor": "\x00"}, "cursor"),
        ({"cursor": forged}, "cursor"),
        ({"cursor": "A" * 100_000}, "cursor"),
    ]
    for kwargs, reason in cases:
        with pytest.raises(InvalidFilterError, match=reason):
            cluster.client.inbox("ticket", **kwargs)
    with pytest.raises(InvalidFilterError, match="deeper than"):
        cluster.client.resume_many("ticket", where=deep, value="x", idempotency_key="k")
    with pytest.raises(InvalidRequestError, match="NUL"):
        cluster.client.resume_many("ticket", items=[("t\x00", "i")], value="x", idempotency_key="k")
    assert len(cluster.client.inbox("ticket").items) == 1  # nothing changed


def test_resume_many_answers_every_selected_wait_once(make_cluster: MakeCluster) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    ids = paused(cluster, 6)
    outcomes = cluster.client.resume_many(
        "ticket",
        where={"team": "ops"},
        value="approved",
        idempotency_key="ops-friday",
        actor="alice",
        note="weekly sweep",
    )
    assert sorted(o.thread_id for o in outcomes) == ids[0::2]
    assert {o.outcome for o in outcomes} == {"applied"}
    cluster.deliver()
    for i, thread_id in enumerate(ids):
        state = cluster.client.get_state("ticket", thread(thread_id))
        if i % 2 == 0:
            assert state.values["decision"] == "approved"
            assert state.next == ()
        else:
            assert "decision" not in state.values
    assert [w.thread_id for w in cluster.client.inbox("ticket").items] == ids[1::2]
    (record,) = cluster.client.resume_history("ticket", thread(ids[0]))
    assert (record.actor, record.note, record.route, record.status) == (
        "alice",
        "weekly sweep",
        "client",
        "success",
    )
    assert list(record.value.values()) == ["approved"]


def test_resume_many_run_twice_applies_once(make_cluster: MakeCluster) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    ids = paused(cluster, 4)
    first = cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k1")
    again = cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k1")
    assert {o.outcome for o in first} == {"applied"}
    assert sorted(o.thread_id for o in again) == sorted(ids)
    assert {o.outcome for o in again} == {"already applied"}
    assert {o.run_id for o in again} == {o.run_id for o in first}
    cluster.deliver()
    third = cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k1")
    assert {o.outcome for o in third} == {"already applied"}
    # each node body ran twice: the first ask, and once more on its one resume
    assert all(calls.counts[f"ask:{team}"] == 4 for team in ("ops", "sales"))


def test_resume_many_by_items_reports_waits_that_are_not_pending(make_cluster: MakeCluster) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    paused(cluster, 2)
    waits = cluster.client.inbox("ticket").items
    outcomes = cluster.client.resume_many(
        "ticket",
        items=[(waits[0].thread_id, waits[0].interrupt_id), ("t000", "no-such-interrupt")],
        value="yes",
        idempotency_key="pick",
    )
    by = {(o.thread_id, o.outcome) for o in outcomes}
    assert ("t000", "applied") in by
    assert ("t000", "not pending") in by
    with pytest.raises(ValueError, match="not both"):
        cluster.client.resume_many("ticket", value="x", idempotency_key="k", where={}, items=[])
    with pytest.raises(ValueError, match="None"):
        cluster.client.resume_many("ticket", value=None, idempotency_key="k", where={})


def test_a_thread_answered_by_a_human_first_is_a_conflict_not_a_second_resume(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    ids = paused(cluster, 2)
    wait = cluster.client.inbox("ticket").items[0]
    cluster.client.submit("ticket", Command(resume={wait.interrupt_id: "human"}), thread(ids[0]))
    assert cluster.client.inbox("ticket").items[0].resuming
    outcomes = {
        o.thread_id: o
        for o in cluster.client.resume_many("ticket", where={}, value="bulk", idempotency_key="b")
    }
    assert outcomes[ids[0]].outcome == "conflict"
    assert outcomes[ids[1]].outcome == "applied"
    cluster.deliver()
    assert cluster.client.get_state("ticket", thread(ids[0])).values["decision"] == "human"
    assert cluster.client.get_state("ticket", thread(ids[1])).values["decision"] == "bulk"


def _now(cluster: InlineCluster) -> None:
    """Put the store's clock at wall time: interrupt() computes deadlines from it."""
    cluster.clock.now = datetime.now(UTC)


def test_a_deadline_resumes_the_wait_with_its_default_once_across_sweepers(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls, deadline=timedelta(minutes=5))}, workers=3)
    _now(cluster)
    cluster.run("ticket", {"items": ["ops", "T-1"]}, thread("late"))
    cluster.run("ticket", {"items": ["ops", "T-2"]}, thread("answered"))
    (wait,) = [w for w in cluster.client.inbox("ticket").items if w.thread_id == "late"]
    assert wait.deadline is not None
    assert timedelta(minutes=4) < wait.deadline - cluster.clock.now < timedelta(minutes=6)
    assert sweep_once(cluster.workers[0]).deadlines == 0
    waits = {w.thread_id: w.interrupt_id for w in cluster.client.inbox("ticket").items}
    (done,) = cluster.client.resume_many(
        "ticket", items=[("answered", waits["answered"])], value="human", idempotency_key="h"
    )
    assert done.outcome == "applied"
    cluster.deliver()
    cluster.clock.advance(301)
    cluster.beat()
    made = [sweep_once(ctx).deadlines for ctx in cluster.workers]
    assert sum(made) == 1  # three sweepers, one resume
    cluster.deliver()
    state = cluster.client.get_state("ticket", thread("late"))
    assert state.values["decision"] == "auto-approved"
    (record,) = cluster.client.resume_history("ticket", thread("late"))
    assert (record.route, record.actor, record.status) == ("deadline", "deadline", "success")
    assert cluster.client.inbox("ticket").items == []
    assert sum(sweep_once(ctx).deadlines for ctx in cluster.workers) == 0


def two_questions() -> Any:
    """Two tasks of one step, each waiting with a deadline."""

    def split(state: Log) -> list[Send]:
        return [Send("ask", {"item": item}) for item in state["items"]]

    def ask(task: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"item": task["item"]}, deadline=timedelta(minutes=5), default="-")
        return {"log": [f"{task['item']}={answer}"]}

    g = StateGraph(Log)
    g.add_node("ask", ask)
    g.add_conditional_edges(START, split)
    return g.compile()


def test_a_wait_asked_again_keeps_its_first_deadline(make_cluster: MakeCluster) -> None:
    """Answering one of two waits re-runs the other's task: its clock does not restart."""
    cluster = make_cluster({"q": two_questions()})
    _now(cluster)
    cluster.run("q", {"items": ["a", "b"]}, thread("x"))
    before = {w.value["item"]: w for w in cluster.client.inbox("q").items}
    time.sleep(0.01)  # interrupt() reads the wall clock
    (done,) = cluster.client.resume_many(
        "q", items=[("x", before["a"].interrupt_id)], value="yes", idempotency_key="a"
    )
    cluster.deliver()
    assert cluster.store.get_run(str(done.run_id)).status == "interrupted"
    (left,) = cluster.client.inbox("q").items
    assert left.interrupt_id == before["b"].interrupt_id
    assert left.deadline == before["b"].deadline
    assert left.created_at == before["b"].created_at


def test_an_edit_of_the_state_takes_the_waits_it_left_out_of_the_inbox(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    (tid,) = paused(cluster, 1)
    assert len(cluster.client.inbox("ticket").items) == 1
    cluster.client.update_state("ticket", thread(tid), {"log": ["edited"]})
    assert cluster.client.get_state("ticket", thread(tid)).interrupts == ()
    assert cluster.client.inbox("ticket").items == []


def test_cancel_during_a_fan_out_ends_the_run_and_no_task_writes(make_cluster: MakeCluster) -> None:
    calls = Calls()
    cluster = make_cluster({"fan": fan(calls)})
    cfg = thread()
    handle = cluster.client.submit("fan", {"items": ["a", "b", "c"], "log": []}, cfg)
    cluster.deliver(limit=1)  # the fan-out step is dispatched
    assert len(cluster.broker.tasks) == 3
    ended = cluster.client.cancel("fan", cfg, reason="wrong input", actor="bob")
    assert ended == [handle.run_id]
    cluster.deliver()
    assert not any(k.startswith("work") for k in calls.counts)
    assert calls.counts["join"] == 0
    run = cluster.store.get_run(handle.run_id)
    assert run.status == "cancelled"
    assert run.error is not None
    assert "wrong input" in run.error["message"]
    state = cluster.client.get_state("fan", cfg)
    assert state.next == ()
    assert state.metadata is not None
    assert state.metadata["cancelled"]["actor"] == "bob"
    assert "decision" not in state.values
    # the thread takes new input afterwards
    out = cluster.run("fan", {"items": ["d"]}, cfg)
    assert out["decision"] == "d"


def test_cancel_a_waiting_thread_clears_its_inbox_and_refuses_its_resume(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    (tid,) = paused(cluster, 1)
    wait = cluster.client.inbox("ticket").items[0]
    assert cluster.client.cancel("ticket", thread(tid), reason="duplicate ticket") == []
    assert cluster.client.inbox("ticket").items == []
    # refused when made, not when its run starts: nothing is queued
    with pytest.raises(UnknownInterruptError, match="matches no pending interrupt"):
        cluster.client.submit("ticket", Command(resume={wait.interrupt_id: "yes"}), thread(tid))
    with pytest.raises(InvalidResumeError, match="no pending interrupt"):
        cluster.client.submit("ticket", Command(resume="yes"), thread(tid))
    assert not cluster.broker.coordinator
    with pytest.raises(ValueError, match="reason"):
        cluster.client.cancel("ticket", thread(tid), reason="")
    with pytest.raises(ThreadNotFoundError, match="no run was ever made"):
        cluster.client.cancel("ticket", thread("no-such-thread"), reason="typo")
    runs = cluster.store.list_runs(RunQuery(thread_id=tid))
    (record,) = [r for r in runs if r["kind"] == "cancel"]
    assert (record["status"], record["origin"]["note"]) == ("success", "duplicate ticket")


def test_submit_many_queues_every_run_and_keys_make_it_safe_to_repeat(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    items = [({"items": ["ops", f"T-{i}"]}, thread(f"m{i}"), f"start-{i}") for i in range(5)]
    handles = cluster.client.submit_many("ticket", items, actor="batch")
    assert [h.created for h in handles] == [True] * 5
    again = cluster.client.submit_many("ticket", items)
    assert [h.run_id for h in again] == [h.run_id for h in handles]
    assert [h.created for h in again] == [False] * 5
    cluster.deliver()
    assert all("__interrupt__" in h.wait(0) for h in handles)
    assert sum(calls.counts.values()) == 5
    no_thread: RunnableConfig = {}
    with pytest.raises(ValueError, match="thread_id"):
        cluster.client.submit_many("ticket", [({"items": ["a", "b"]}, no_thread)])


def test_a_running_fan_out_lists_its_step_progress(make_cluster: MakeCluster) -> None:
    calls = Calls()
    cluster = make_cluster({"fan": fan(calls)})
    handle = cluster.client.submit("fan", {"items": ["a", "b", "c"], "log": []}, thread())
    cluster.deliver(limit=1)  # the fan-out step is dispatched, none of its tasks ran

    def listed() -> dict[str, Any]:
        (row,) = [r for r in cluster.store.list_runs(RunQuery()) if r["run_id"] == handle.run_id]
        return row

    assert listed()["status"] == "running"
    assert listed()["step_tasks"] == {"done": 0, "total": 3}
    cluster.deliver(limit=2)
    assert listed()["step_tasks"] == {"done": 2, "total": 3}
    cluster.deliver()
    assert listed()["status"] == "success"
    assert listed()["step_tasks"] is None


def test_a_human_resume_after_the_deadline_took_the_default_is_not_pending(
    make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline's resume ran first: a human answering the same wait afterwards is
    told "not pending", never "applied" (the thread took the default)."""
    cluster = make_cluster({"ticket": ticket(Calls(), deadline=timedelta(minutes=5))})
    _now(cluster)
    cluster.run("ticket", {"items": ["ops", "T-1"]}, thread("raced"))
    (wait,) = cluster.client.inbox("ticket").items
    read = cluster.store.inbox(InboxQuery(graph="ticket", limit=10))  # the human's read
    cluster.clock.advance(301)
    cluster.beat()
    assert sweep_once(cluster.workers[0]).deadlines == 1
    cluster.deliver()  # meanwhile the deadline's resume ran: the thread took the default
    with monkeypatch.context() as m:  # the bulk resume acts on what it read before
        m.setattr(cluster.store, "inbox", lambda query: read)
        (late,) = cluster.client.resume_many(
            "ticket", items=[("raced", wait.interrupt_id)], value="human", idempotency_key="h"
        )
    assert late.outcome == "not pending"
    plain = cluster.client.resume_many("ticket", where={}, value="human", idempotency_key="h2")
    assert plain == []  # nothing waits
    with pytest.raises(InvalidResumeError, match="no pending interrupt"):
        cluster.client.submit("ticket", Command(resume="human"), thread("raced"))
    assert cluster.client.get_state("ticket", thread("raced")).values["decision"] == "auto-approved"


def test_resume_many_by_items_reports_only_the_threads_it_names(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    ids = paused(cluster, 3)
    waits = {w.thread_id: w.interrupt_id for w in cluster.client.inbox("ticket").items}
    first = cluster.client.resume_many(
        "ticket", items=[(t, waits[t]) for t in ids[:2]], value="ok", idempotency_key="k"
    )
    assert {o.outcome for o in first} == {"applied"}
    again = cluster.client.resume_many(
        "ticket", items=[(ids[0], waits[ids[0]])], value="ok", idempotency_key="k"
    )
    assert [(o.thread_id, o.outcome) for o in again] == [(ids[0], "already applied")]


def test_cancel_then_resume_is_not_pending_and_resume_then_cancel_cancels_it(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    a, b = paused(cluster, 2)
    waits = {w.thread_id: w.interrupt_id for w in cluster.client.inbox("ticket").items}
    assert cluster.client.cancel("ticket", thread(a), reason="gone") == []
    (outcome,) = cluster.client.resume_many(
        "ticket", items=[(a, waits[a])], value="yes", idempotency_key="k1"
    )
    assert outcome.outcome == "not pending"
    (queued,) = cluster.client.resume_many(
        "ticket", items=[(b, waits[b])], value="yes", idempotency_key="k2"
    )
    assert queued.outcome == "applied"
    assert cluster.client.cancel("ticket", thread(b), reason="gone") == [queued.run_id]
    cluster.deliver()
    assert cluster.store.get_run(str(queued.run_id)).status == "cancelled"
    state = cluster.client.get_state("ticket", thread(b))
    assert "decision" not in state.values  # the cancelled resume had no effect
    assert state.next == ()


def test_cancel_waits_for_the_run_a_worker_is_advancing_which_then_is_not_cancelled(
    make_cluster: MakeCluster,
) -> None:
    """A worker is running a node of the thread inline: cancel waits for its lease. The
    run ends first and is not reported cancelled (what it did stays); once cancel
    returns no node of the thread starts."""
    started, release = threading.Event(), threading.Event()
    log: list[tuple[str, float]] = []

    def slow(state: Log) -> dict[str, Any]:
        log.append(("slow", time.monotonic()))
        started.set()
        assert release.wait(10)
        return {"log": ["slow"]}

    def after(state: Log) -> dict[str, Any]:
        log.append(("after", time.monotonic()))
        return {"log": ["after"]}

    g = StateGraph(Log)
    g.add_node("slow", slow)
    g.add_node("after", after)
    g.add_edge(START, "slow")
    g.add_edge("slow", "after")
    cluster = make_cluster({"slow": g.compile()})
    cluster.beat()
    cfg = thread()
    first = cluster.client.submit("slow", {"log": []}, cfg)
    second = cluster.client.submit("slow", {"log": []}, cfg)  # queued behind it
    worker = threading.Thread(target=cluster.deliver, kwargs={"limit": 1})
    worker.start()
    assert started.wait(10)
    cancelled: list[list[str]] = []
    canceller = threading.Thread(
        target=lambda: cancelled.append(cluster.client.cancel("slow", cfg, reason="stop"))
    )
    canceller.start()
    time.sleep(0.2)
    assert not cancelled  # waiting for the lease
    release.set()
    worker.join(10)
    canceller.join(10)
    returned = time.monotonic()
    assert cancelled == [[second.run_id]]
    assert first.status() == "success"  # ended first: not cancelled
    assert second.status() == "cancelled"
    cluster.deliver()
    assert [name for name, _ in log] == ["slow", "after"]
    assert all(at < returned for _, at in log)
    assert cluster.client.get_state("slow", cfg).values["log"] == ["slow", "after"]


class Decision(BaseModel):
    decision: Literal["approve", "reject"]


def test_an_answer_its_response_schema_refuses_keeps_the_wait_open(
    make_cluster: MakeCluster,
) -> None:
    """As in-process: the refused answer fails the run, the wait stays pending (in the
    inbox too, as get_state shows it), and a valid answer then resumes it."""

    def ask(state: Log) -> dict[str, Any]:
        answer = interrupt({"question": "pay?"}, response_schema=Decision)
        return {"decision": answer.decision}

    g = StateGraph(Log)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    cluster = make_cluster({"pay": g.compile()})
    cfg = thread()
    cluster.run("pay", {"log": []}, cfg)
    (wait,) = cluster.client.inbox("pay").items
    bad = cluster.client.submit("pay", Command(resume={wait.interrupt_id: {"decision": "x"}}), cfg)
    cluster.deliver()
    with pytest.raises(ValueError, match="decision"):  # pydantic's, as in-process
        bad.wait(0)
    assert [w.interrupt_id for w in cluster.client.inbox("pay").items] == [wait.interrupt_id]
    assert [i.id for i in cluster.client.get_state("pay", cfg).interrupts] == [wait.interrupt_id]
    good = cluster.client.submit(
        "pay", Command(resume={wait.interrupt_id: {"decision": "approve"}}), cfg
    )
    cluster.deliver()
    assert good.wait(0)["decision"] == "approve"
    assert cluster.client.inbox("pay").items == []
