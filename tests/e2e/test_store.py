"""The nodes' store on the cluster: one Postgres store that every worker shares, given to
a graph compiled with a store (an InMemoryStore would live in one worker process)."""

from __future__ import annotations

from typing import Any

from checkpoint_pg import PostgresStore
from tests.e2e.graphs import memo_graph
from workers.client import GraphClient


def test_task_jobs_on_several_workers_share_one_durable_store(
    client: GraphClient, thread: Any
) -> None:
    out = client.invoke("memo", {"n": 6, "items": []}, thread, timeout=90)
    thread_id = thread["configurable"]["thread_id"]
    assert out["items"] == ["plan", *[f"w{i}" for i in range(6)]]  # the join saw every write
    assert len(set(out["pids"])) >= 2  # written from more than one worker process
    url = client.settings.database_url
    assert url is not None
    with PostgresStore.from_conn_string(url) as store:
        items = store.search(("memo", thread_id), limit=100)
    assert sorted(item.key for item in items) == [f"w{i}" for i in range(6)]
    assert {item.value["pid"] for item in items} == set(out["pids"])
    # the graph's own InMemoryStore, in this process, was not what the nodes used
    assert memo_graph.store is not None
    assert memo_graph.store.search(("memo", thread_id)) == []
