"""GraphClient waits on Postgres LISTEN/NOTIFY, with a polling fallback (real Postgres).

No celery here: runs are created, given events and finished through the RunStore, as the
workers do, while the client waits on them.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from workers._listener import EVENTS_CHANNEL, RUNS_CHANNEL, RunListener
from workers.client import GraphClient
from workers.dispatch import QueueDepths
from workers.errors import GraphMismatchError, RunTimeoutError, ThreadBusyError
from workers.messages import TaskMessage
from workers.registry import GraphRegistry
from workers.settings import Settings
from workers.store import NewRun, PostgresRunStore, RunPayload, make_pool

pytestmark = pytest.mark.integration


class NoBroker:
    """A broker that sends nothing: the tests play the workers' part themselves."""

    def send_coordinate(self, run_id: str, *, delay: float = 0.0) -> None:
        pass

    def send_coordinates(self, run_ids: Sequence[str], *, per_message: int = 1) -> None:
        pass

    def send_tasks(
        self,
        messages: Sequence[TaskMessage],
        *,
        delay: float = 0.0,
        labels: Sequence[str] | None = None,
    ) -> None:
        pass

    def queue_depths(self) -> QueueDepths:
        return QueueDepths(0, 0)

    def dead_letter(self, message: str, reason: str) -> None:
        pass


@pytest.fixture(scope="module")
def store(pg_url: str) -> Iterator[PostgresRunStore]:
    pool = make_pool(pg_url)
    s = PostgresRunStore(pool)
    s.setup()
    yield s
    pool.close()


@pytest.fixture
def client(store: PostgresRunStore) -> Iterator[GraphClient]:
    c = GraphClient(
        settings=Settings(),
        registry=GraphRegistry.parse("chain=tests.e2e.graphs:chain_graph"),
        saver=InMemorySaver(),
        store=store,
        broker=NoBroker(),
    )
    yield c
    _listener(c).close()  # the pool is the module's


def _listener(client: GraphClient) -> RunListener:
    assert client.listener is not None  # a client on a Postgres store listens
    return client.listener


def new_run(store: PostgresRunStore) -> str:
    run, created = store.create_run(
        NewRun(
            run_id=str(uuid.uuid4()),
            thread_id=f"notify-{uuid.uuid4()}",
            graph="chain",
            kind="input",
            payload=RunPayload(),
        )
    )
    assert created
    return run.run_id


def later(delay: float, fn: Any, *args: Any, **kwargs: Any) -> threading.Thread:
    """Call fn after delay seconds in a thread (as a worker would); started."""

    def run() -> None:
        time.sleep(delay)
        fn(*args, **kwargs)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_finish_reports_only_the_call_that_finished_the_run(store: PostgresRunStore) -> None:
    run_id = new_run(store)
    assert store.finish_run(run_id, "success", result={"n": 1}) is True
    assert store.finish_run(run_id, "error", error={"type": "ValueError"}) is False
    assert store.get_run(run_id).status == "success"


def test_finish_and_events_notify_at_commit_once_per_batch(
    store: PostgresRunStore, pg_url: str
) -> None:
    run_id = new_run(store)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"LISTEN {RUNS_CHANNEL}")
        conn.execute(f"LISTEN {EVENTS_CHANNEL}")
        store.add_events(run_id, [((), "updates", {"a": i}) for i in range(5)])
        store.finish_run(run_id, "success")
        store.finish_run(run_id, "success")  # already done: no second notification
        notes = [(n.channel, n.payload) for n in conn.notifies(timeout=1.0)]
    # the run's end says how it ended (test_run_outcome_notify.py)
    assert notes == [(EVENTS_CHANNEL, run_id), (RUNS_CHANNEL, f"{run_id} success - - ")]


def test_wait_done_wakes_on_the_notification(client: GraphClient, store: PostgresRunStore) -> None:
    _listener(client).fallback = 30.0  # only the notification can end the wait in time
    run_id = new_run(store)
    finished_at: list[float] = []

    def finish() -> None:
        # stamped before: the waiter may wake before finish() even returns here
        finished_at.append(time.monotonic())
        store.finish_run(run_id, "success", result={"answer": 42})

    later(0.3, finish)
    run = client.wait_done(run_id, timeout=20)
    woke = time.monotonic() - finished_at[0]
    assert run.status == "success"
    assert run.result == {"answer": 42}
    assert woke < 5.0, f"woke {woke:.3f}s after finishing began: no notification seen"


def test_wait_done_falls_back_when_no_notification_comes(
    client: GraphClient, store: PostgresRunStore
) -> None:
    run_id = new_run(store)

    def finish_silently() -> None:  # an UPDATE that notifies no one
        with store.pool.connection() as conn:
            conn.execute(
                "UPDATE graphruntime_runs SET status = 'success' WHERE run_id = %s", (run_id,)
            )

    t0 = time.monotonic()
    later(0.2, finish_silently)
    run = client.wait_done(run_id, timeout=20)
    assert run.status == "success"
    assert time.monotonic() - t0 < 10.0
    assert _listener(client)._conn is not None  # it listened, and still fell back


def test_wait_done_times_out_as_before(client: GraphClient, store: PostgresRunStore) -> None:
    run_id = new_run(store)
    t0 = time.monotonic()
    with pytest.raises(RunTimeoutError, match="still queued"):
        client.wait_done(run_id, timeout=0.6)
    took = time.monotonic() - t0
    assert 0.6 <= took < 5.0
    # the listener stops listening once no one waited for its linger
    assert eventually(lambda: not _listener(client)._listening, within=_listener(client).linger + 5)


def eventually(check: Any, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_concurrent_waiters_each_get_their_own_run(
    client: GraphClient, store: PostgresRunStore
) -> None:
    _listener(client).fallback = 30.0  # the one reading thread must wake the others
    run_ids = [new_run(store) for _ in range(6)]
    results: dict[str, tuple[str, float]] = {}
    finished_at: dict[str, float] = {}

    def wait(run_id: str) -> None:
        run = client.wait_done(run_id, timeout=20)
        results[run_id] = (run.status, time.monotonic())

    waiters = [threading.Thread(target=wait, args=(r,)) for r in run_ids]
    for w in waiters:
        w.start()
    time.sleep(0.3)
    for i, run_id in enumerate(reversed(run_ids)):
        store.finish_run(run_id, "success", result={"i": i})
        finished_at[run_id] = time.monotonic()
        assert eventually(lambda run_id=run_id: run_id in results)
        # only finished runs' waiters are back
        assert set(results) == set(finished_at)
    for w in waiters:
        w.join(20)
    for run_id in run_ids:
        status, done_at = results[run_id]
        assert status == "success"
        assert done_at - finished_at[run_id] < 5.0


def test_a_broken_listen_connection_falls_back_and_reconnects(
    client: GraphClient, store: PostgresRunStore, pg_url: str
) -> None:
    _listener(client).fallback = 30.0
    run_id = new_run(store)
    out: list[str] = []

    def wait() -> None:
        out.append(client.wait_done(run_id, timeout=20).status)

    waiter = threading.Thread(target=wait)
    waiter.start()
    # the waiter listens; the reader thread reads notifications
    assert eventually(
        lambda: _listener(client)._listening and _listener(client)._reader is not None
    )
    conn = _listener(client)._conn
    assert conn is not None
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
    assert eventually(lambda: _listener(client)._conn is None)  # dropped: the waiter polls
    store.finish_run(run_id, "success")
    waiter.join(10)
    assert out == ["success"]

    # the next wait listens on a new connection
    run_id = new_run(store)
    later(0.3, store.finish_run, run_id, "success")
    t0 = time.monotonic()
    assert client.wait_done(run_id, timeout=20).status == "success"
    assert time.monotonic() - t0 < 5.0
    assert _listener(client)._conn is not None
    assert _listener(client)._conn is not conn


def test_stream_wakes_on_event_notifications(client: GraphClient, store: PostgresRunStore) -> None:
    _listener(client).fallback = 30.0  # longer than the stream's timeout
    thread_id = f"notify-{uuid.uuid4()}"

    def play_the_workers() -> None:
        assert eventually(lambda: store.runs_of_thread(thread_id))
        run_id = str(store.runs_of_thread(thread_id)[0]["run_id"])
        for node in ("n0", "n1"):
            time.sleep(0.2)
            store.add_events(run_id, [((), "updates", {node: {"steps": [node]}})])
        time.sleep(0.2)
        store.finish_run(run_id, "success")

    workers = threading.Thread(target=play_the_workers, daemon=True)
    workers.start()
    t0 = time.monotonic()
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    chunks = list(client.stream("chain", {"steps": []}, config, stream_mode="updates", timeout=20))
    assert chunks == [{"n0": {"steps": ["n0"]}}, {"n1": {"steps": ["n1"]}}]
    assert time.monotonic() - t0 < 10.0
    workers.join(5)


def test_update_state_waits_for_a_lease_held_with_no_run_in_flight(
    client: GraphClient, store: PostgresRunStore
) -> None:
    """A coordinator lets go of the thread's lease just after it finished the run, which
    is when a notified waiter comes back: update_state waits for that lease a moment."""
    thread_id = f"notify-{uuid.uuid4()}"
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    store.bind_thread(thread_id, "chain")
    store.heartbeat("holder", "test", 1)  # a live worker holds the thread
    assert store.acquire_thread(thread_id, "holder", stale=60)
    later(0.3, store.release_thread, thread_id, "holder")
    client.update_state("chain", config, {"steps": ["edited"]})
    assert client.get_state("chain", config).values == {"steps": ["edited"]}

    client.lock_wait = 0.3
    assert store.acquire_thread(thread_id, "holder", stale=60)
    try:
        with pytest.raises(ThreadBusyError):
            client.update_state("chain", config, {"steps": ["again"]})
    finally:
        store.release_thread(thread_id, "holder")
        store.remove_worker("holder")
    assert client.get_state("chain", config).values == {"steps": ["edited"]}


def test_update_state_refuses_another_graphs_thread(
    client: GraphClient, store: PostgresRunStore
) -> None:
    thread_id = f"notify-{uuid.uuid4()}"
    store.bind_thread(thread_id, "other")
    with pytest.raises(GraphMismatchError, match="belongs to graph 'other'"):
        client.update_state("chain", {"configurable": {"thread_id": thread_id}}, {"steps": []})


def test_a_run_nobody_takes_makes_the_client_ask_for_a_worker(
    client: GraphClient, store: PostgresRunStore, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    import workers._client_runs as client_module

    monkeypatch.setattr(client_module, "NO_WORKER_HINT_AFTER", 0.2)
    run_id = new_run(store)
    with (
        caplog.at_level("WARNING", logger="workers.client"),
        pytest.raises(RunTimeoutError, match="Is a worker consuming queue") as caught,
    ):
        client.wait_done(run_id, timeout=1.0)
    assert "graphruntime.coordinator" in str(caught.value)
    assert re.search(r"\(\d+ worker processes beat now\)", str(caught.value))
    (warning,) = [r for r in caplog.records if "still queued" in r.getMessage()]
    assert run_id in warning.getMessage()
    # a run that is running gets no such hint: its worker is there
    busy = new_run(store)
    store.set_running(busy, 0)
    with pytest.raises(RunTimeoutError) as caught:
        client.wait_done(busy, timeout=0.5)
    assert "Is a worker" not in str(caught.value)


def test_waits_one_after_another_listen_once_and_unlisten_after_the_linger(
    client: GraphClient, store: PostgresRunStore
) -> None:
    listener = _listener(client)
    listener.linger = 60.0  # longer than the test: only UNLISTEN can end it, not time
    runs = [new_run(store), new_run(store)]
    listened: list[int | None] = []
    for run_id in runs:
        later(0.1, store.finish_run, run_id, "success")
        assert client.wait_done(run_id, timeout=10).status == "success"
        listened.append(listener._generation if listener._listening else None)
    assert listened[0] is not None
    assert listened == [listened[0]] * 2  # still listening between: one LISTEN for both
    listener.linger = 0.0  # the reader sees it at its next look
    assert eventually(lambda: not listener._listening, within=10)
