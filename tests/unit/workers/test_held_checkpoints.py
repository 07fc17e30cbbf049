"""Held checkpoints in the coordinator (durability "async"): refused or failed stores.

A fake saver stores a block of calls as PostgresSaver.pipelined() does (one verdict per
thread) and can refuse them or fail; tests/integration covers the real saver.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from checkpoint_pg import CheckpointStoreError, CheckpointStoreUnavailable
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict
from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from graphruntime.types import Durability
from tests.unit.workers.block_saver import BlockSaver
from tests.unit.workers.graphs import Calls, Log, ticket
from workers.store.memory import InMemoryRunStore
from workers.testing import InlineCluster


def cluster_with(graph: Pregel) -> tuple[InlineCluster, BlockSaver]:
    shared: dict[str, tuple[InMemoryRunStore, BlockSaver]] = {}

    def stores(serde: Any) -> tuple[InMemoryRunStore, BlockSaver]:
        if not shared:  # one database: every process sees the same rows
            shared["db"] = (InMemoryRunStore(serde), BlockSaver(serde=serde))
        return shared["db"]

    cluster = InlineCluster({"g": graph}, stores=stores)
    return cluster, shared["db"][1]


def thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def two_steps(second: Callable[[Log], dict[str, Any]], ran: list[str]) -> Pregel:
    def first(state: Log) -> dict[str, Any]:
        ran.append("first")
        return {"log": ["first"]}

    def third(state: Log) -> dict[str, Any]:
        ran.append("third")
        return {"log": ["third"]}

    g = StateGraph(Log)
    g.add_node("first", first)
    g.add_node("second", second)
    g.add_node("third", third)
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    g.add_edge("second", "third")
    return g.compile()


def test_a_run_whose_checkpoints_cannot_be_stored_ends_with_that_error() -> None:
    ran: list[str] = []
    cluster, faults = cluster_with(two_steps(lambda s: {"log": ["second"]}, ran))
    faults.verdict = lambda t: CheckpointStoreError("PostgresSaver.pipelined failed: bad (test)")
    handle = cluster.client.submit("g", {"log": []}, thread())
    cluster.deliver()
    run = cluster.store.get_run(handle.run_id)
    assert run.status == "error"
    assert "bad (test)" in str(run.error)


def test_a_run_whose_checkpoints_are_refused_is_sent_again_not_ended() -> None:
    ran: list[str] = []
    cluster, faults = cluster_with(two_steps(lambda s: {"log": ["second"]}, ran))
    faults.verdict = lambda t: CheckpointConflict("the thread moved (test)")
    handle = cluster.client.submit("g", {"log": []}, thread())
    assert cluster.deliver(limit=1) == 1
    assert cluster.store.get_run(handle.run_id).status == "running"
    assert [job.run_ids for job in cluster.broker.coordinator] == [(handle.run_id,)]
    faults.verdict = lambda t: None
    cluster.deliver()
    assert cluster.store.get_run(handle.run_id).status == "success"


def test_a_slow_node_whose_earlier_steps_were_refused_stops_the_run() -> None:
    ran: list[str] = []

    def slow(state: Log) -> dict[str, Any]:
        time.sleep(0.1)  # the watchdog stores (and is refused) meanwhile
        ran.append("second")
        return {"log": ["second"]}

    cluster, faults = cluster_with(two_steps(slow, ran))
    faults.verdict = lambda t: CheckpointConflict("the thread moved (test)")
    handle = cluster.client.submit("g", {"log": []}, thread())
    assert cluster.deliver(limit=1) == 1
    assert faults.blocks
    assert ran == ["first", "second"]  # "third" did not run on a thread that moved
    assert [job.run_ids for job in cluster.broker.coordinator] == [(handle.run_id,)]


def test_a_failing_node_after_a_refusal_sends_the_run_again() -> None:
    ran: list[str] = []

    def slow_failure(state: Log) -> dict[str, Any]:
        time.sleep(0.1)
        raise ValueError("the node failed")

    cluster, faults = cluster_with(two_steps(slow_failure, ran))
    faults.verdict = lambda t: CheckpointConflict("the thread moved (test)")
    handle = cluster.client.submit("g", {"log": []}, thread())
    assert cluster.deliver(limit=1) == 1  # the job does not fail
    assert cluster.store.get_run(handle.run_id).status == "running"
    assert [job.run_ids for job in cluster.broker.coordinator] == [(handle.run_id,)]


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_outage_storing_the_interrupt_does_not_end_the_run(durability: Durability) -> None:
    cluster, faults = cluster_with(ticket(Calls()))
    faults.outage_on_writes_of = "__interrupt__"
    cfg = thread()
    handle = cluster.client.submit("g", {"items": ["ops", "T-1"]}, cfg, durability=durability)
    with pytest.raises(CheckpointStoreUnavailable):
        cluster.deliver(limit=1)
    assert cluster.store.get_run(handle.run_id).status != "interrupted"
    cluster.broker.send_coordinate(handle.run_id)  # the job's retry (Celery's, on workers)
    cluster.deliver()
    assert cluster.store.get_run(handle.run_id).status == "interrupted"
    head = cluster.saver.get_tuple(cfg)
    assert head is not None
    assert [w[1] for w in head.pending_writes or []].count("__interrupt__") == 1
    assert len(cluster.client.inbox("g").items) == 1
