"""A coordinator round's end on Postgres (and its in-memory mirror): one statement, so one
round trip and one durable commit; each thread's next run read after its lease row is
locked; refused whole under a changed epoch."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from graphruntime.checkpoint import JsonSerializer
from workers._sql import query
from workers.errors import StoreRecoveredError
from workers.store import (
    InboxQuery,
    InMemoryRunStore,
    NewRun,
    PostgresRunStore,
    Released,
    RunEnd,
    RunPayload,
    RunStore,
    Wait,
    make_pool,
)
from workers.store._connector import Connector, Params, Row

pytestmark = pytest.mark.integration


class _Recorded:
    """A connector that records what its store sends: per session or batch, whether it is
    an explicit transaction and the named statements in it."""

    def __init__(self, db: Connector) -> None:
        self.db = db
        self.sent: list[tuple[str, bool, list[str]]] = []

    @contextmanager
    def session(self, operation: str, *, transaction: bool = False) -> Iterator[Any]:
        names: list[str] = []
        self.sent.append(("session", transaction, names))
        with self.db.session(operation, transaction=transaction) as session:
            yield _RecordedSession(session, names)

    def batch(self, operation: str, statements: Sequence[tuple[str, Params]]) -> list[list[Row]]:
        self.sent.append(("batch", True, [name for name, _ in statements]))
        return self.db.batch(operation, statements)


class _RecordedSession:
    def __init__(self, session: Any, names: list[str]) -> None:
        self.session = session
        self.names = names

    def all(self, name: str, params: Params | None = None) -> list[Row]:
        self.names.append(name)
        return self.session.all(name, params)  # type: ignore[no-any-return]

    def many(
        self, name: str, params: Sequence[Params], *, returning: bool = True
    ) -> list[list[Row]]:
        self.names += [name] * len(params)
        return self.session.many(name, params, returning=returning)  # type: ignore[no-any-return]


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PostgresRunStore]:
    pool = make_pool(pg_url)
    store = PostgresRunStore(pool, JsonSerializer())
    store.setup()
    yield store
    pool.close()


@pytest.fixture(params=["memory", "postgres"])
def store(request: pytest.FixtureRequest) -> RunStore:
    if request.param == "memory":
        return InMemoryRunStore(JsonSerializer())
    return request.getfixturevalue("pg_store")  # type: ignore[no-any-return]


def _queued(store: RunStore, thread: str) -> str:
    new = NewRun.of("g", thread, RunPayload(input={"n": 1}), store.serde)
    run, created = store.create_run(new)
    assert created
    return run.run_id


def _claimed(store: RunStore, worker: str = "w") -> tuple[str, str, str | None]:
    """A thread whose run ``worker``'s job claimed: (thread, run, epoch)."""
    thread = f"t-{uuid.uuid4().hex[:8]}"
    run_id = _queued(store, thread)
    (claim,) = store.claim_runs([run_id], worker, stale=30, token="job")
    assert claim.leased
    assert claim.run is not None
    assert claim.run.run_id == run_id
    return thread, run_id, claim.epoch


def _wait(thread: str, run_id: str, interrupt_id: str) -> Wait:
    return Wait(
        graph="g",
        thread_id=thread,
        interrupt_id=interrupt_id,
        node="review",
        namespace="review:1",
        value={"question": interrupt_id},
        run_id=run_id,
        checkpoint_id="c1",
    )


def _lease_holder(store: RunStore, thread: str) -> str | None:
    if isinstance(store, InMemoryRunStore):
        return store.memory.threads[thread]["lease_holder"]  # type: ignore[no-any-return]
    assert isinstance(store, PostgresRunStore)
    with store.pool.connection() as conn:
        row = conn.execute(
            "SELECT lease_holder FROM graphruntime_threads WHERE thread_id = %s", (thread,)
        ).fetchone()
    assert row is not None
    return row["lease_holder"]  # type: ignore[no-any-return]


def test_a_rounds_end_is_one_statement_in_its_own_transaction(store: RunStore) -> None:
    """Two runs end (one with its inbox) and a third thread is only freed: one statement,
    no transaction around it (autocommit: the statement is its transaction, one round
    trip, one durable commit)."""
    a, run_a, epoch = _claimed(store)
    b, run_b, _ = _claimed(store)
    c, run_c, _ = _claimed(store)
    recorded = _Recorded(store.db)
    store.db = recorded
    ends = [
        RunEnd(run_a, a, "success", result={"ok": 1}, inbox=[]),
        RunEnd(run_b, b, "interrupted", result={}, inbox=[_wait(b, run_b, "i1")]),
    ]
    released = store.finish_and_release_many(ends, worker="w", free=[c], epoch=epoch)
    assert recorded.sent == [("session", False, ["end_runs"])]
    # the run c's claim left running is its thread's next
    assert released == [Released(True, None), Released(True, None), Released(False, run_c)]
    store.db = recorded.db
    assert [store.get_run(r).status for r in (run_a, run_b)] == ["success", "interrupted"]
    assert [_lease_holder(store, t) for t in (a, b, c)] == [None, None, None]


def test_a_rounds_end_that_queues_a_run_again_is_one_transaction(store: RunStore) -> None:
    """Two runs end (one with its inbox), a third thread is only freed and a claimed run
    is queued again: requeue_runs then end_runs, in one transaction sent at once (one
    round trip, one durable commit); the run queued again is its thread's next."""
    a, run_a, epoch = _claimed(store)
    b, run_b, _ = _claimed(store)
    c, run_c, _ = _claimed(store)
    next_of_a = _queued(store, a)
    recorded = _Recorded(store.db)
    store.db = recorded
    ends = [
        RunEnd(run_a, a, "success", result={"ok": 1}, inbox=[]),
        RunEnd(run_b, b, "interrupted", result={}, inbox=[_wait(b, run_b, "i1")]),
    ]
    released = store.finish_and_release_many(
        ends, worker="w", free=[c], requeue=[run_c], epoch=epoch
    )
    assert recorded.sent == [("batch", True, ["requeue_runs", "end_runs"])]
    assert released == [Released(True, next_of_a), Released(True, None), Released(False, run_c)]
    store.db = recorded.db
    assert store.get_run(run_a).status == "success"
    assert store.get_run(run_a).result == {"ok": 1}
    assert store.get_run(run_b).status == "interrupted"
    assert store.get_run(run_c).status == "queued"
    assert [(w.thread_id, w.interrupt_id) for w in store.inbox(InboxQuery(thread_id=b))] == [
        (b, "i1")
    ]
    assert [_lease_holder(store, t) for t in (a, b, c)] == [None, None, None]


def test_an_end_under_a_changed_epoch_writes_nothing(store: RunStore) -> None:
    """Refused whole, though one of its runs had ended already (the check does not hang on
    a run being ended): no run ends, no inbox changes, no lease is freed, nothing is
    queued again."""
    a, run_a, epoch = _claimed(store)
    b, run_b, _ = _claimed(store)
    c, run_c, _ = _claimed(store)
    store.replace_inbox(a, [_wait(a, run_a, "kept")])
    assert store.finish_run(run_b, "success", result={"done": True})
    _recover(store)
    ends = [
        RunEnd(run_a, a, "success", result={"ok": 1}, inbox=[]),
        RunEnd(run_b, b, "error", error={"type": "late"}),
    ]
    with pytest.raises(StoreRecoveredError):
        store.finish_and_release_many(ends, worker="w", free=[c], requeue=[run_c], epoch=epoch)
    assert [store.get_run(r).status for r in (run_a, run_b, run_c)] == [
        "running",
        "success",
        "running",
    ]
    assert store.get_run(run_b).error is None
    assert [w.interrupt_id for w in store.inbox(InboxQuery(thread_id=a))] == ["kept"]
    assert [_lease_holder(store, t) for t in (a, b, c)] == ["w", "w", "w"]
    # an end of a run that already ended, alone, is refused as well
    with pytest.raises(StoreRecoveredError):
        store.finish_and_release_many([ends[1]], worker="w", epoch=epoch)
    assert _lease_holder(store, b) == "w"


def test_after_recovery_emptied_the_epoch_an_end_is_refused_and_a_claim_starts_anew(
    pg_store: PostgresRunStore,
) -> None:
    """Crash recovery empties the UNLOGGED epoch table (migration 0007). An end under the
    epoch seen before is refused, though no epoch row is there to differ; the next claim
    writes a new epoch, under which its run ends."""
    thread, run_id, epoch = _claimed(pg_store)
    assert epoch is not None
    with pg_store.pool.connection() as conn:
        conn.execute("TRUNCATE graphruntime_epoch")
    end = RunEnd(run_id, thread, "success", result={"ok": 1}, inbox=[])
    with pytest.raises(StoreRecoveredError):
        pg_store.finish_and_release_many([end], worker="w", epoch=epoch)
    assert pg_store.get_run(run_id).status == "running"
    assert _lease_holder(pg_store, thread) == "w"
    with pg_store.pool.connection() as conn:
        conn.execute("TRUNCATE graphruntime_epoch")
    other, other_run, fresh = _claimed(pg_store)
    assert fresh is not None
    assert fresh != epoch
    with pg_store.pool.connection() as conn:
        row = conn.execute("SELECT epoch::text AS epoch FROM graphruntime_epoch").fetchone()
    assert row is not None
    assert row["epoch"] == fresh
    ended = RunEnd(other_run, other, "success", result={"ok": 2}, inbox=[])
    assert pg_store.finish_and_release_many([ended], worker="w", epoch=fresh) == [
        Released(True, None)
    ]
    assert pg_store.get_run(other_run).status == "success"


def test_an_end_finds_its_runs_by_run_id_on_its_generic_plan(fresh_db: str) -> None:
    """The end's prepared (generic) plans (end_runs, and requeue_runs before it) read
    graphruntime_runs by run id only, as the tables' statistics show a long history and
    few live runs: a plan that scanned the queued and running runs (and their versions
    not yet vacuumed) to join them with the ends cost every end as much as the queue is
    long."""
    pool = make_pool(fresh_db)
    try:
        store = PostgresRunStore(pool, JsonSerializer())
        store.setup()
        for n in range(3):
            _queued(store, f"live-{n}")
        with pool.connection() as conn:
            conn.execute(
                "INSERT INTO graphruntime_runs (run_id, thread_id, graph, status, kind,"
                " payload_type, payload) SELECT gen_random_uuid(), 'done-' || n, 'g',"
                " 'success', 'input', 'json', '\\x00' FROM generate_series(1, 5000) AS n"
            )
            conn.execute("ANALYZE graphruntime_runs")
            plans = {
                name: conn.execute(
                    "EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + _numbered(query(name))
                ).fetchone()
                for name in ("end_runs", "requeue_runs")
            }
    finally:
        pool.close()
    for name, row in plans.items():
        assert row is not None
        reads = [  # how graphruntime_runs is read: the index, or None for the whole table
            node.get("Index Name")
            for node in _nodes(row["QUERY PLAN"][0]["Plan"])
            if (
                node.get("Relation Name") == "graphruntime_runs"
                and node["Node Type"] in ("Seq Scan", "Index Scan", "Index Only Scan")
            )
            or (
                str(node.get("Index Name", "")).startswith("graphruntime_runs_")
                and node["Node Type"] == "Bitmap Index Scan"
            )
        ]
        assert reads == ["graphruntime_runs_pkey"], (name, reads)


def _numbered(text: str) -> str:
    """A named query with $1, $2... for its parameters (EXPLAIN (GENERIC_PLAN) plans it
    as a prepared statement is planned, without values)."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, text)


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for sub in node.get("Plans", ()):
        yield from _nodes(sub)


def _recover(store: RunStore) -> None:
    """What crash recovery does to the server's epoch (migration 0007)."""
    if isinstance(store, InMemoryRunStore):
        store.memory.server_epoch = str(uuid.uuid4())
        return
    assert isinstance(store, PostgresRunStore)
    with store.pool.connection() as conn:
        conn.execute("UPDATE graphruntime_epoch SET epoch = gen_random_uuid()")


def test_a_run_queued_while_the_end_waits_for_the_lease_row_is_its_next(
    pg_store: PostgresRunStore, pg_url: str
) -> None:
    """The end's snapshot is taken when its statement starts; a run committed after that,
    while the statement waits for the thread's row, before it frees the lease (a job that
    looked at the lease before the lock and left its run to the holder), is still read as
    the thread's next run: the next runs are read once the lease rows are locked."""
    thread, run_id, epoch = _claimed(pg_store)
    ended: list[list[Released]] = []
    with psycopg.connect(pg_url, autocommit=True) as holder:
        with holder.transaction():
            holder.execute(
                "SELECT 1 FROM graphruntime_threads WHERE thread_id = %s FOR UPDATE", (thread,)
            )
            end = RunEnd(run_id, thread, "success", result={"ok": 1}, inbox=[])
            ending = threading.Thread(
                target=lambda: ended.append(
                    pg_store.finish_and_release_many([end], worker="w", epoch=epoch)
                )
            )
            ending.start()
            _wait_for_lock(holder, thread)
            later = _queued(pg_store, thread)
        ending.join(timeout=30)
    assert not ending.is_alive()
    assert ended == [[Released(True, later)]]
    assert pg_store.get_run(run_id).status == "success"


def _wait_for_lock(conn: psycopg.Connection[Any], thread: str) -> None:
    """Until a statement of another backend waits for a lock (the end, on the row held)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
        if row is not None and row[0] > 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"the end of thread {thread}'s run never waited for its row")


def test_a_queued_run_is_the_run_a_read_gives(store: RunStore) -> None:
    """create_run reads back only what its statement set (status, pause, times); the run
    it returns, made of the request, is the one a read of the row gives."""
    from graphruntime.types import Command

    thread = f"t-{uuid.uuid4().hex[:8]}"
    origin = {"route": "client", "actor": "ann", "note": "n"}
    new = NewRun.of(
        "g", thread, RunPayload(input={"n": 1}), store.serde, idempotency_key="k", origin=origin
    )
    run, created = store.create_run(new)
    assert created
    assert run == store.get_run(run.run_id)
    assert (run.status, run.resumes_run, run.origin) == ("queued", None, origin)
    # a resume queued behind it answers the pause that run makes: the statement says so
    resume = NewRun.of("g", thread, RunPayload(input=Command(resume="yes")), store.serde)
    ((queued, fresh, error),) = store.create_runs([resume])
    assert fresh
    assert error is None
    assert queued is not None
    assert queued.resumes_run == run.run_id
    assert queued == store.get_run(queued.run_id)


def test_a_run_named_in_another_spelling_of_its_uuid_is_reported_ended(
    pg_store: PostgresRunStore,
) -> None:
    thread = f"t-{uuid.uuid4().hex[:8]}"
    run_id = _queued(pg_store, thread)
    # Postgres takes the uuid in capitals; the end must say it ended that run
    assert pg_store.finish_run(run_id.upper(), "success", result={"n": 2})
    assert pg_store.get_run(run_id).status == "success"
    assert not pg_store.finish_run(run_id.upper(), "success", result={"n": 3})
