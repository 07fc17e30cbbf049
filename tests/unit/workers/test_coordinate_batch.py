"""Coordinator messages that name several runs: one job advances them and ends them in
one transaction. In memory here; tests/integration runs the same tests on Postgres."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.channels.untracked_value import UntrackedValue
from graphruntime.config import RunnableConfig
from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import Command
from tests.unit.workers.graphs import Calls, Log, fan, ticket
from workers.coordinator import coordinate_many
from workers.errors import ConfigurationError, MalformedMessageError, StoreUnavailableError
from workers.heartbeat import Heartbeat
from workers.messages import CoordinateMessage, parse
from workers.settings import Settings, load_settings
from workers.store import Released, RunEnd
from workers.sweeper import sweep_once
from workers.testing import InlineCluster, Job

MakeCluster = Callable[..., InlineCluster]


@pytest.fixture
def make_cluster() -> MakeCluster:
    """In-memory clusters; tests/integration runs the same tests on Postgres."""
    return InlineCluster


def thread(name: str | None = None) -> RunnableConfig:
    return {"configurable": {"thread_id": name or f"t-{uuid.uuid4()}"}}


def paused(cluster: InlineCluster, n: int) -> list[str]:
    """``n`` threads of ``ticket`` waiting; their thread ids."""
    ids = []
    for i in range(n):
        cfg = thread()
        cluster.run("ticket", {"items": ["ops", f"T-{i}"]}, cfg)
        ids.append(cfg["configurable"]["thread_id"])
    return ids


def count_ends(cluster: InlineCluster) -> list[list[RunEnd]]:
    """Record the ends of every finish_and_release_many call of the cluster's store."""
    calls: list[list[RunEnd]] = []
    real = cluster.store.finish_and_release_many

    def spy(
        ends: Sequence[RunEnd],
        *,
        worker: str,
        free: Sequence[str] = (),
        requeue: Sequence[str] = (),
        epoch: str | None = None,
    ) -> list[Released]:
        calls.append(list(ends))
        return real(ends, worker=worker, free=free, requeue=requeue, epoch=epoch)

    cluster.store.finish_and_release_many = spy  # type: ignore[method-assign]
    return calls


def test_one_message_advances_several_threads_and_ends_them_in_one_transaction(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    ids = paused(cluster, 5)
    outcomes = cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k")
    (job,) = cluster.broker.coordinator
    assert sorted(job.run_ids) == sorted(o.run_id for o in outcomes if o.run_id)
    ends = count_ends(cluster)
    assert cluster.deliver() == 1
    assert [len(batch) for batch in ends] == [5]  # one transaction ends the five runs
    for o in outcomes:
        assert o.run_id is not None
        assert cluster.client.store.get_run(o.run_id).status == "success"
    for tid in ids:
        assert cluster.client.get_state("ticket", thread(tid)).values["decision"] == "ok"
    assert cluster.client.inbox("ticket").items == []
    assert calls.counts["ask:ops"] == 10  # each thread: its first ask, then its resume
    for tid in ids:  # every lease was freed
        assert cluster.store.acquire_thread(tid, "someone-else", cluster.workers[0].stale)


def test_a_duplicate_batch_message_changes_nothing(make_cluster: MakeCluster) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    ids = paused(cluster, 3)
    cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k")
    (job,) = cluster.broker.coordinator
    cluster.deliver()
    history = {
        tid: len(list(cluster.client.get_state_history("ticket", thread(tid)))) for tid in ids
    }
    runs = {r: cluster.store.get_run(r) for r in job.run_ids}
    before = dict(calls.counts)
    ends = count_ends(cluster)
    cluster.broker.coordinator.append(Job("coordinate", job.run_id, run_ids=job.run_ids))
    assert cluster.deliver(1) == 1  # redelivered, to another worker
    assert dict(calls.counts) == before
    assert ends == []  # nothing ended, nothing to free
    for tid in ids:
        assert len(list(cluster.client.get_state_history("ticket", thread(tid)))) == history[tid]
    for run_id, run in runs.items():
        again = cluster.store.get_run(run_id)
        assert (again.status, again.result) == (run.status, run.result)
    assert cluster.broker.coordinator == []


def gated(calls: Calls, gate: list[Callable[[], None]]) -> Pregel:
    """One node; ``gate`` callbacks run inside it (another job, while this run holds its lease)."""

    def step(state: Log) -> dict[str, Any]:
        calls.hit("step")
        while gate:
            gate.pop()()
        return {"log": ["step"]}

    g = StateGraph(Log)
    g.add_node("step", step)
    g.add_edge(START, "step")
    return g.compile()


def test_a_thread_leased_by_a_live_worker_is_left_to_it_and_its_run_ends_once_later(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    gate: list[Callable[[], None]] = []
    cluster = make_cluster({"gated": gated(calls, gate)})
    busy = thread()
    first = cluster.client.submit("gated", {"log": []}, busy)  # worker-1 will run it
    cluster.broker.coordinator.clear()
    handles = cluster.client.submit_many(
        "gated", [({"log": []}, thread()), ({"log": []}, busy), ({"log": []}, thread())]
    )
    (batch,) = cluster.broker.coordinator
    assert batch.run_ids == tuple(h.run_id for h in handles)
    cluster.broker.coordinator.clear()
    seen: dict[str, str] = {}

    def batch_on_worker_0() -> None:
        # worker-1 holds the busy thread's lease, in the middle of its first run
        coordinate_many(cluster.workers[0], batch.run_ids)
        seen.update({h.run_id: cluster.store.get_run(h.run_id).status for h in handles})

    gate.append(batch_on_worker_0)
    coordinate_many(cluster.workers[1], [first.run_id])
    # the batch ended the other threads' runs and left the busy thread's to its holder
    assert seen == {
        handles[0].run_id: "success",
        handles[1].run_id: "queued",
        handles[2].run_id: "success",
    }
    # which took it after its own run, in the same job
    assert cluster.store.get_run(first.run_id).status == "success"
    assert cluster.store.get_run(handles[1].run_id).status == "success"
    assert calls.counts["step"] == 4  # each run's node once
    assert cluster.broker.coordinator == []
    state = cluster.client.get_state("gated", busy)
    assert state.values["log"] == ["step", "step"]


def test_a_thread_named_twice_in_a_batch_runs_its_runs_in_order(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    cfg = thread()
    other = thread()
    handles = cluster.client.submit_many(
        "ticket",
        [
            ({"items": ["ops", "T-1"]}, cfg),
            ({"items": ["ops", "T-2"]}, other),
            (Command(resume="yes"), cfg),
        ],
    )
    assert len(cluster.broker.coordinator) == 1
    cluster.deliver()
    statuses = [cluster.store.get_run(h.run_id).status for h in handles]
    assert statuses == ["interrupted", "interrupted", "success"]
    assert cluster.client.get_state("ticket", cfg).values["decision"] == "yes"


def test_an_outage_mid_batch_keeps_the_runs_ended_before_it_and_frees_every_lease(
    make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.context import run_loop as real_loop

    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls)})
    ids = paused(cluster, 3)
    outcomes = cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k")
    (job,) = cluster.broker.coordinator
    cluster.broker.coordinator.clear()
    opened = iter(range(100))

    def flaky_loop(*args: Any, **kwargs: Any) -> Any:
        if next(opened) == 1:  # the second run: Postgres goes away
            raise StoreUnavailableError("Postgres restarting")
        return real_loop(*args, **kwargs)

    monkeypatch.setattr("workers.coordinator.run_loop", flaky_loop)
    with pytest.raises(StoreUnavailableError):
        coordinate_many(cluster.workers[0], job.run_ids)
    monkeypatch.setattr("workers.coordinator.run_loop", real_loop)
    statuses = [cluster.store.get_run(r).status for r in job.run_ids]
    assert statuses[0] == "success"
    assert statuses[1:] == ["running", "queued"]  # failed in it; not reached: queued again
    for tid in ids:  # no lease left with the live worker
        assert cluster.store.acquire_thread(tid, "probe", cluster.workers[0].stale)
        cluster.store.release_thread(tid, "probe")
    coordinate_many(cluster.workers[1], job.run_ids)  # the job, retried
    assert {cluster.store.get_run(o.run_id or "").status for o in outcomes} == {"success"}
    assert calls.counts["ask:ops"] == 6


def test_runs_not_started_within_the_budget_are_handed_back_to_other_workers(
    make_cluster: MakeCluster,
) -> None:
    # a budget of 0: every run is "slow"
    settings = load_settings(database_url="memory://", redis_url="memory://", coordinate_budget=0)
    cluster = make_cluster({"ticket": ticket(Calls())}, settings=settings)
    handles = cluster.client.submit_many(
        "ticket", [({"items": ["ops", f"T-{i}"]}, thread()) for i in range(3)]
    )
    assert len(cluster.broker.coordinator) == 1
    assert cluster.deliver(0, limit=1) == 1
    statuses = [cluster.store.get_run(h.run_id).status for h in handles]
    assert statuses == ["interrupted", "queued", "queued"]  # queued again, as they were
    # one message each (as many as fitted in the budget), for any worker
    assert [j.run_ids for j in cluster.broker.coordinator] == [
        (handles[1].run_id,),
        (handles[2].run_id,),
    ]
    assert cluster.deliver(1) == 2
    assert {cluster.store.get_run(h.run_id).status for h in handles} == {"interrupted"}


class Resource:
    """A live object: kept in an untracked channel, never stored."""


class Live(TypedDict, total=False):
    log: list[str]
    live: Annotated[object, UntrackedValue]


def unstorable(calls: Calls) -> Pregel:
    """Its output holds a value no run result can store (an untracked channel's)."""

    def setup(state: Live) -> dict[str, Any]:
        calls.hit("setup")
        return {"log": ["setup"], "live": Resource()}

    g = StateGraph(Live)
    g.add_node("setup", setup)
    g.add_edge(START, "setup")
    return g.compile()


def test_a_result_that_cannot_be_stored_holds_back_no_other_run_nor_its_lease(
    make_cluster: MakeCluster,
) -> None:
    calls = Calls()
    cluster = make_cluster({"ticket": ticket(calls), "unstorable": unstorable(calls)})
    good = cluster.client.submit_many(
        "ticket", [({"items": ["ops", f"T-{i}"]}, thread()) for i in range(2)]
    )
    cfg = thread()
    bad = cluster.client.submit_many("unstorable", [({"log": []}, cfg)])[0]
    jobs = cluster.broker.coordinator[:]
    cluster.broker.coordinator.clear()
    failures = coordinate_many(cluster.workers[0], [*jobs[0].run_ids, *jobs[1].run_ids])
    assert [cluster.store.get_run(h.run_id).status for h in good] == ["interrupted"] * 2
    assert cluster.store.get_run(bad.run_id).status == "running"
    assert len(failures) == 1
    assert bad.run_id in failures[0]
    assert "SerializationError" in failures[0]
    tid = cfg["configurable"]["thread_id"]
    assert cluster.store.acquire_thread(tid, "probe", cluster.workers[0].stale)  # freed
    cluster.store.release_thread(tid, "probe")
    # left to the sweeper, which finds it stalled: its output then comes from its checkpoint
    coordinate_many(cluster.workers[1], [bad.run_id])
    assert bad.wait(0) == {"log": ["setup"]}
    assert calls.counts["setup"] == 1


def test_one_run_per_message_when_the_batch_setting_is_1() -> None:
    settings = load_settings(database_url="memory://", redis_url="memory://", coordinate_batch=1)
    cluster = InlineCluster({"ticket": ticket(Calls())}, settings=settings)
    cluster.client.submit_many("ticket", [({"items": ["ops", "T"]}, thread()) for _ in range(3)])
    assert [len(job.run_ids) for job in cluster.broker.coordinator] == [1, 1, 1]
    cluster.deliver()
    assert cluster.client.inbox("ticket").items != []


@pytest.mark.parametrize("value", [0, 257, -1])
def test_a_batch_setting_out_of_range_is_refused_by_name(value: int) -> None:
    with pytest.raises(ConfigurationError, match="GRAPHRUNTIME_COORDINATE_BATCH"):
        load_settings(coordinate_batch=value)


@pytest.mark.parametrize("value", [-1, 61, "soon"])
def test_a_budget_setting_out_of_range_is_refused_by_name(value: object) -> None:
    with pytest.raises(ConfigurationError, match="GRAPHRUNTIME_COORDINATE_BUDGET"):
        load_settings(coordinate_budget=value)


def test_coordinator_messages_name_one_run_or_several() -> None:
    assert parse(CoordinateMessage, {"run_id": "a", "v": 1}).runs == ("a",)
    assert parse(CoordinateMessage, {"run_ids": ["a", "b"], "v": 2}).runs == ("a", "b")
    assert CoordinateMessage.of(["a"]).v == 1
    for bad in (
        {"run_ids": ["a"], "v": 1},
        {"run_id": "a", "v": 2},
        {"run_ids": [], "v": 2},
        {"v": 1},
        {"run_ids": [str(i) for i in range(257)], "v": 2},
    ):
        with pytest.raises(MalformedMessageError):
            parse(CoordinateMessage, bad)


def test_bulk_resume_sends_each_page_once_queued_and_a_page_the_broker_missed_later(
    make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers import approvals
    from workers.errors import BrokerUnavailableError

    monkeypatch.setattr(approvals, "MAX_PAGE", 2)
    cluster = make_cluster({"ticket": ticket(Calls())})
    paused(cluster, 5)
    real_send = cluster.broker.send_coordinates
    sent: list[tuple[str, ...]] = []

    def flaky_send(run_ids: Sequence[str], *, per_message: int = 1) -> None:
        if not sent:
            sent.append(())
            raise BrokerUnavailableError("Redis restarting")
        sent.append(tuple(run_ids))
        real_send(run_ids, per_message=per_message)

    cluster.broker.send_coordinates = flaky_send  # type: ignore[method-assign]
    outcomes = cluster.client.resume_many("ticket", where={}, value="ok", idempotency_key="k")
    # the first page could not go: it went with the others, once, at the end
    assert [len(s) for s in sent] == [0, 5]
    assert sorted(sent[1]) == sorted(o.run_id or "" for o in outcomes)
    cluster.deliver()
    assert {cluster.store.get_run(o.run_id or "").status for o in outcomes} == {"success"}


def test_a_lease_a_job_could_not_free_is_freed_by_its_process_heartbeat(
    make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outage longer than the job's patience: the lease stays with the live worker
    until its heartbeat, once the store is back, frees it (no job of it holds it)."""
    cluster = make_cluster({"ticket": ticket(Calls())})
    ctx = cluster.workers[0]
    cluster.beat()  # live workers
    cfg = thread()
    tid = cfg["configurable"]["thread_id"]
    cluster.client.submit("ticket", {"items": ["ops", "T-1"]}, cfg)

    def away(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailableError("Postgres away")

    monkeypatch.setattr("workers._round.RELEASE_PATIENCE", 0.0)
    monkeypatch.setattr(cluster.store, "finish_and_release_many", away)
    monkeypatch.setattr(cluster.store, "release_thread", away)
    with pytest.raises(StoreUnavailableError):
        cluster.deliver(limit=1)
    monkeypatch.undo()  # the store is back
    assert ctx.job_token is None
    assert not cluster.store.acquire_thread(tid, "probe", ctx.stale)  # still held

    cluster.clock.advance(1)  # the in-memory store's clock; Postgres' moves by itself
    Heartbeat(cluster.store, ctx.worker_name, 0.0, lambda: ctx.job_token).beat()
    assert cluster.store.acquire_thread(tid, "probe", ctx.stale)


def test_the_heartbeat_leaves_the_lease_of_the_current_job_and_a_young_one(
    make_cluster: MakeCluster,
) -> None:
    cluster = make_cluster({"ticket": ticket(Calls())})
    ctx = cluster.workers[0]
    cfg = thread()
    tid = cfg["configurable"]["thread_id"]
    cluster.client.submit("ticket", {"items": ["ops", "T-1"]}, cfg)
    cluster.deliver()
    assert cluster.store.acquire_thread(tid, ctx.worker_name, ctx.stale, "job-2")
    cluster.clock.advance(1)
    # the job holding it runs: kept, however old
    Heartbeat(cluster.store, ctx.worker_name, 0.0, lambda: "job-2").beat()
    # another job runs, but the lease is younger than the grace (a job that just began,
    # whose token the beat read before it was set): kept too
    Heartbeat(cluster.store, ctx.worker_name, 3600.0, lambda: "job-3").beat()
    cluster.beat()  # alive: its lease stands
    assert not cluster.store.acquire_thread(tid, "probe", ctx.stale)


def test_a_lease_release_a_crash_took_back_does_not_wedge_the_thread(
    make_cluster: MakeCluster,
) -> None:
    """A Postgres crash can bring a freed lease back to the live worker that freed it.
    The step's last task job then finds the thread leased by a live worker and leaves
    the run to it; the worker's heartbeat frees the lease (no job of it holds it), and
    the sweeper finds the run stalled and sends it on: it ends, once."""
    calls = Calls()
    # on Postgres time is real: a worker is stale after 2 s without a heartbeat
    settings = Settings(database_url="memory://", redis_url="memory://", heartbeat_interval=1.0)
    cluster = make_cluster({"fan": fan(calls)}, settings=settings)
    ctx = cluster.workers[0]
    cluster.beat()
    cfg = thread()
    tid = cfg["configurable"]["thread_id"]
    handle = cluster.client.submit("fan", {"items": ["a", "b"]}, cfg)
    cluster.deliver(limit=1)  # the coordinator dispatches the fan-out and frees the lease
    assert cluster.broker.tasks
    # what recovery from the crash does: the release is undone, with the job's token
    assert cluster.store.acquire_thread(tid, ctx.worker_name, ctx.stale, "the-job-that-freed-it")
    while cluster.broker.tasks:  # the task jobs; the last one finds the lease taken
        cluster.beat()  # worker 0 is alive: its lease holds, however slow the machine is
        cluster.deliver(worker=1, limit=1)
    assert handle.status() == "running"
    assert not cluster.broker.coordinator

    cluster.clock.advance(1)
    time.sleep(0.01)
    Heartbeat(cluster.store, ctx.worker_name, 0.0, lambda: ctx.job_token).beat()
    cluster.clock.advance(3 * ctx.stale)  # the run has not moved for a while
    time.sleep(3 * ctx.stale)  # (Postgres' clock is the real one)
    cluster.beat()
    assert sweep_once(ctx).runs_nudged == 1
    cluster.deliver()
    assert handle.status() == "success"
    assert calls.counts["join"] == 1
