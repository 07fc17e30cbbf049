"""Heartbeats say which Celery node a process belongs to and which graphs it serves: the
status counts nodes, and a run of a graph no live worker serves can be failed at once."""

from __future__ import annotations

from workers.heartbeat import Heartbeat, unserved_reason
from workers.store import InMemoryRunStore


def beat(store: InMemoryRunStore, worker: str, node: str | None, graphs: list[str] | None) -> None:
    Heartbeat(store, worker, 5.0, node=node, graphs=graphs).beat()


def test_overview_counts_nodes_and_their_processes() -> None:
    store = InMemoryRunStore()
    for pid in (1, 2, 3):
        beat(store, f"host:{pid}", "w0@host", ["chain"])
    for pid in (4, 5):
        beat(store, f"host:{pid}", "w1@host", ["chain"])
    beat(store, "client:host:9:abc", None, None)  # a client's beat is no worker
    beat(store, "old:7", None, None)  # a worker that does not say its node: one of its own
    overview = store.overview(10.0)
    assert (overview.workers, overview.processes) == (3, 6)


def test_a_graph_no_live_worker_serves_is_unserved_once_a_worker_could_have_started() -> None:
    store = InMemoryRunStore()
    beat(store, "host:1", "w0@host", ["chain", "fan"])
    beat(store, "host:2", "w1@host", ["chain"])
    beat(store, "client:host:9:abc", None, None)
    assert unserved_reason(store, "fan", 10.0, waited=30.0) is None
    reason = unserved_reason(store, "approvals", 10.0, waited=30.0)
    assert reason is not None
    assert "No live worker serves graph 'approvals'" in reason
    assert "the 2 live worker(s) serve chain, fan" in reason
    # too early: a worker that serves it may be starting
    assert unserved_reason(store, "approvals", 10.0, waited=5.0) is None


def test_a_worker_that_does_not_say_its_graphs_leaves_the_question_open() -> None:
    store = InMemoryRunStore()
    beat(store, "host:1", "w0@host", ["chain"])
    beat(store, "old:2", None, None)  # an older release: its graphs are unknown
    assert unserved_reason(store, "approvals", 10.0, waited=30.0) is None


def test_live_workers_list_their_node_and_graphs() -> None:
    store = InMemoryRunStore()
    beat(store, "host:1", "w0@host", ["b", "a"])
    (row,) = store.live_workers(10.0)
    assert (row["node"], row["graphs"]) == ("w0@host", ["b", "a"])
