"""RunStore.append_events on Postgres: a node's tokens as the workers store them while it
runs (workers/_live_events.py): one statement per batch, in order, typed, one
notification; and a run's batches commit in the order they are numbered."""

from __future__ import annotations

import operator
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict

import psycopg
import pytest

from graphruntime.checkpoint import JsonSerializer
from graphruntime.graph import START, StateGraph
from tests.integration.workers.test_approvals_pg import db, make_cluster
from workers._listener import EVENTS_CHANNEL
from workers._sql import query
from workers.store import NewRun, PostgresRunStore, RunPayload, make_pool
from workers.testing import InlineCluster

pytestmark = pytest.mark.integration

__all__ = ("db", "make_cluster")

langchain_messages = pytest.importorskip("langchain_core.messages")


@pytest.fixture(scope="module")
def store(pg_url: str) -> Iterator[PostgresRunStore]:
    pool = make_pool(pg_url)
    s = PostgresRunStore(pool, JsonSerializer(strict=True))  # as the workers' serde
    s.setup()
    yield s
    pool.close()


def new_run(store: PostgresRunStore) -> str:
    run, _ = store.create_run(
        NewRun(
            run_id=str(uuid.uuid4()),
            thread_id=f"live-{uuid.uuid4()}",
            graph="chain",
            kind="input",
            payload=RunPayload(),
        )
    )
    return run.run_id


def _token(text: str) -> tuple[tuple[str, ...], str, Any]:
    chunk = langchain_messages.AIMessageChunk(content=text, id="m1")
    metadata = {"langgraph_node": "ask", "langgraph_path": ("__pregel_pull", "ask"), "step": 1}
    return (("agent:1",), "messages", (chunk, metadata))


def test_a_batch_is_kept_in_order_with_its_types(store: PostgresRunStore) -> None:
    run_id = new_run(store)
    store.add_events(run_id, [((), "values", {"n": 0})])
    store.append_events(run_id, [_token(t) for t in ("a", " ", "b")])
    store.append_events(run_id, [])
    store.append_events(run_id, [_token("c"), ((), "custom", {"k": [1, 2]})])
    events = store.events_after(run_id, 0)
    assert [e.mode for e in events] == [
        "values",
        "messages",
        "messages",
        "messages",
        "messages",
        "custom",
    ]
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    tokens = [e for e in events if e.mode == "messages"]
    assert [e.payload[0].content for e in tokens] == ["a", " ", "b", "c"]
    message, metadata = tokens[0].payload
    assert isinstance(message, langchain_messages.AIMessageChunk)
    assert message.id == "m1"
    assert metadata["langgraph_path"] == ("__pregel_pull", "ask")
    assert tokens[0].ns == ("agent:1",)
    assert events[-1].payload == {"k": [1, 2]}
    assert events[-1].ns == ()


def test_a_batch_notifies_streaming_clients_once(store: PostgresRunStore, pg_url: str) -> None:
    run_id = new_run(store)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"LISTEN {EVENTS_CHANNEL}")
        store.append_events(run_id, [_token(str(i)) for i in range(20)])
        notes = [(n.channel, n.payload) for n in conn.notifies(timeout=1.0)]
    assert notes == [(EVENTS_CHANNEL, run_id)]


def _lock_waiters(conn: psycopg.Connection[Any]) -> int:
    """Sessions waiting for an advisory lock in ``conn``'s database (pg_locks shows the
    whole server's, other tests' included)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    ).fetchone()
    return int(row[0]) if row else 0


def _open_batch(conn: psycopg.Connection[Any], store: PostgresRunStore, run_id: str) -> None:
    """append_events' statement in a transaction left open: numbered, not committed."""
    rows = store._event_rows(run_id, [_token("first")])
    params = {
        "run_id": run_id,
        "ns": [r["ns"] for r in rows],
        "modes": [r["mode"] for r in rows],
        "types": [r["payload_type"] for r in rows],
        "payloads": [r["payload"] for r in rows],
    }
    conn.execute(query("append_events"), params)


def _waits_for_the_lock(thread: threading.Thread, watch: psycopg.Connection[Any]) -> bool:
    give_up = time.monotonic() + 30
    while thread.is_alive() and not _lock_waiters(watch) and time.monotonic() < give_up:
        time.sleep(0.01)
    return thread.is_alive() and _lock_waiters(watch) == 1


def test_a_runs_batches_commit_in_the_order_they_are_numbered(
    store: PostgresRunStore, pg_url: str
) -> None:
    """A batch numbered first but committed late would be skipped by a client that read
    past a later one meanwhile; so a run's next batch waits for the open one."""
    run_id = new_run(store)
    other = new_run(store)
    with (
        psycopg.connect(pg_url) as open_tx,
        psycopg.connect(pg_url, autocommit=True) as watch,
    ):
        _open_batch(open_tx, store, run_id)
        store.append_events(other, [_token("another run's")])  # not held up by it
        second = threading.Thread(target=store.append_events, args=(run_id, [_token("second")]))
        second.start()
        assert _waits_for_the_lock(second, watch)  # waits for the open batch
        assert store.events_after(run_id, 0) == []  # a client sees neither yet
        open_tx.commit()
        second.join(30)
    assert not second.is_alive()
    assert [e.payload[0].content for e in store.events_after(run_id, 0)] == ["first", "second"]


class Pair(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def test_a_tasks_completion_keeps_its_chunks_after_the_runs_open_batch(
    make_cluster: Callable[..., InlineCluster], db: str
) -> None:
    graph = StateGraph(Pair)
    graph.add_node("a", lambda s: {"log": ["a"]}).add_node("b", lambda s: {"log": ["b"]})
    compiled = graph.add_edge(START, "a").add_edge(START, "b").compile()
    cluster = make_cluster({"pair": compiled})
    store = cluster.store
    assert isinstance(store, PostgresRunStore)
    config: Any = {"configurable": {"thread_id": f"pair-{uuid.uuid4()}"}}
    handle = cluster.client.submit("pair", {"log": []}, config, stream_mode="updates")
    cluster.deliver(limit=1)  # the coordinator sends the step's two task jobs
    first_job = cluster.broker.tasks[0]
    with (
        psycopg.connect(db) as open_tx,
        psycopg.connect(db, autocommit=True) as watch,
    ):
        _open_batch(open_tx, store, handle.run_id)
        job = threading.Thread(
            target=cluster.deliver, kwargs={"pick": lambda w: first_job, "limit": 1}
        )
        job.start()
        assert _waits_for_the_lock(job, watch)  # its completion waits for the open batch
        open_tx.commit()
        job.join(30)
    assert not job.is_alive()
    cluster.deliver()
    assert handle.status() == "success"
    updates = [e for e in store.events_after(handle.run_id, 0) if e.mode != "values"]
    assert updates[0].mode == "messages"
    assert sorted(next(iter(e.payload)) for e in updates[1:]) == ["a", "b"]
