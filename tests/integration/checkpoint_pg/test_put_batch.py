"""A ``pipelined()`` block's puts and writes, of any number of threads, stored by one
``put_batch`` statement: the same rows as one call at a time, one statement and one round
trip whatever the block's size, and the commit's durability as asked."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from typing import Any, LiteralString

import psycopg
import pytest
from psycopg import pq
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresSaver, migrate
from checkpoint_pg._arrays import (
    BoolArray,
    ByteaArray,
    Int4Array,
    TextArray,
    UuidArray,
    register_arrays,
)
from graphruntime._internal._constants import INTERRUPT
from graphruntime.checkpoint import Checkpoint, JsonSerializer
from graphruntime.config import RunnableConfig
from graphruntime.pregel.driver import PutCheckpoint, PutWrites, SaverRequest, perform_now
from tests.integration.checkpoint_pg.helpers import (
    blob_deleted_behind_the_saver,
    child,
    config,
    count_rows,
    meta,
    thread,
)
from tests.integration.private_postgres import PrivatePostgres, private_postgres

pytestmark = pytest.mark.integration


def _run(saver: PostgresSaver, thread_id: str, ns: str = "") -> list[SaverRequest]:
    """A run's requests, as a coordinator holds them: writes of tasks (several, one with a
    name that is not a UUID, one delivered twice: the first wins, control writes upserted
    twice: the last wins) before each of its puts; a big value (a blob) kept by the later
    puts unchanged."""
    cfg: RunnableConfig = config(thread_id, ns)
    prev: Checkpoint | None = None
    out: list[SaverRequest] = []
    steps: list[dict[str, Any]] = [
        {"__start__": {"q": thread_id}},
        {"q": thread_id, "big": ["b" * 600]},
        {"answer": f"a-{thread_id}"},
    ]
    for step, values in enumerate(steps, -1):
        if prev is not None:
            task = str(uuid.uuid4())
            out.append(PutWrites(cfg, [("q", thread_id), ("x", 1), ("x", 2)], task))
            out.append(PutWrites(cfg, [("answer", step)], f"named-task-{step}", f"~p, {step}"))
            interrupt = str(uuid.uuid4())
            out.append(PutWrites(cfg, [(INTERRUPT, {"ask": 1})], interrupt, "~p, 9"))
            out.append(PutWrites(cfg, [(INTERRUPT, {"ask": 2})], interrupt, "~p, 9"))
            out.append(PutWrites(cfg, [("q", "again")], task))
        checkpoint, versions = child(saver, prev, values, step=step)
        out.append(PutCheckpoint(cfg, checkpoint, meta(step), versions))
        prev = checkpoint
        cfg = config(thread_id, ns, checkpoint["id"])
    return out


_ROWS: dict[str, LiteralString] = {
    "checkpoints": "SELECT * FROM graphruntime_checkpoints WHERE thread_id = %s"
    " ORDER BY checkpoint_ns, checkpoint_id",
    "blobs": "SELECT * FROM graphruntime_blobs WHERE thread_id = %s"
    " ORDER BY checkpoint_ns, channel, version",
    "writes": "SELECT * FROM graphruntime_writes WHERE thread_id = %s ORDER BY seq",
}


def _rows(conn: psycopg.Connection[Any], thread_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every stored row of the thread but its thread id (writes in insertion order)."""
    out = {}
    for table, query in _ROWS.items():
        with conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(query, (thread_id,)).fetchall()
        for row in rows:
            row.pop("thread_id")
            row.pop("seq", None)
        out[table] = rows
    return out


def _retarget(requests: list[SaverRequest], thread_id: str) -> list[SaverRequest]:
    """The same requests on another thread."""

    def moved(cfg: RunnableConfig) -> RunnableConfig:
        return {"configurable": {**cfg["configurable"], "thread_id": thread_id}}

    out: list[SaverRequest] = []
    for r in requests:
        if isinstance(r, PutWrites):
            out.append(PutWrites(moved(r.config), r.writes, r.task_id, r.task_path))
        else:
            out.append(PutCheckpoint(moved(r.config), r.checkpoint, r.metadata, r.new_versions))
    return out


def test_a_block_stores_the_rows_one_call_at_a_time_stores(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    """Checkpoints (fenced and plain), blobs, references to stored blobs, insert-only and
    control writes, a subgraph's namespace: the same rows, in the same order, whether
    stored call by call or by one block."""
    one, root, sub = thread(), thread(), thread()
    requests = _run(saver, one) + _run(saver, one, "sub:1")
    perform_now(saver.fenced(), requests[: len(requests) // 2])
    perform_now(saver, requests[len(requests) // 2 :])
    with saver.pipelined(durable=False) as batch:
        perform_now(batch.fenced(), _retarget(requests[: len(requests) // 2], root))
        perform_now(batch, _retarget(requests[len(requests) // 2 :], root))
        perform_now(batch, _retarget(requests[: len(requests) // 2], sub))
    assert batch.refused == {}
    expected = _rows(pg_conn, one)
    assert expected["blobs"], "the runs store no blob: the test proves less"
    assert len(expected["writes"]) == 2 * 2 * 5  # 2 runs, 2 steps with writes, 5 rows each
    step = saver.get_tuple(requests[5].config)  # the writes made on the input checkpoint
    assert step is not None
    values = {channel: value for _, channel, value in step.pending_writes or []}
    assert (values["q"], values[INTERRUPT]) == (one, {"ask": 2})  # first delivery, last upsert
    assert _rows(pg_conn, root) == expected
    assert _rows(pg_conn, sub) == {
        table: [r for r in rows if r["checkpoint_ns"] == ""] for table, rows in expected.items()
    }


class _Trace:
    """The client's protocol messages on the pool's one connection (libpq's trace)."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self.pool = pool
        self.text = ""

    def __enter__(self) -> _Trace:
        self._file = tempfile.TemporaryFile()
        with self.pool.connection() as conn:
            conn.pgconn.trace(self._file.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        return self

    def __exit__(self, *exc: object) -> None:
        with self.pool.connection() as conn:
            conn.pgconn.untrace()
        self._file.seek(0)
        self.text = self._file.read().decode(errors="replace")
        self._file.close()

    def count(self, side: str, message: str) -> int:
        return sum(
            1 for line in self.text.splitlines() if line.split("\t")[0:3:2] == [side, message]
        )


@pytest.mark.parametrize("runs", [1, 12])
def test_a_block_is_one_statement_and_one_round_trip_whatever_its_size(
    saver: PostgresSaver, pool: ConnectionPool[Any], runs: int
) -> None:
    def block() -> None:
        with saver.pipelined(durable=False) as batch:
            for _ in range(runs):
                perform_now(batch.fenced(), _run(saver, thread()))
        assert batch.refused == {}

    block()  # the statement prepared
    with _Trace(pool) as trace:
        block()
    statements = trace.count("F", "Execute") + trace.count("F", "Query")
    assert (statements, trace.count("B", "ReadyForQuery")) == (1, 1), trace.text[:2000]
    assert "graphruntime_put_batch" not in trace.text  # prepared: sent by name only


def test_a_read_in_the_block_sees_its_writes_and_an_error_after_it_stores_none(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    t = thread()
    first, versions = child(saver, None, {"a": 1}, step=-1)

    def read_then_fail() -> None:
        with saver.pipelined(durable=False) as batch:
            saved = batch.put(config(t), first, meta(-1), versions)
            batch.put_writes(saved, [("a", 2)], "task")
            inside = batch.get_tuple(config(t))
            assert inside is not None
            assert inside.checkpoint["channel_values"] == {"a": 1}
            assert inside.pending_writes == [("task", "a", 2)]
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        read_then_fail()
    assert count_rows(pg_conn, "checkpoints", t) == 0
    assert count_rows(pg_conn, "writes", t) == 0


def test_a_blob_deleted_before_the_block_is_sent_again_after_it(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    c1, second, versions = blob_deleted_behind_the_saver(saver, pg_conn)
    with saver.pipelined() as batch:
        c2 = batch.fenced().put(c1, second, meta(0), versions)
    assert batch.refused == {}
    found = saver.get_tuple(c2)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": ["x" * 500], "n": 1}


class _CountingSerde(JsonSerializer):
    """Keeps every value it serializes (a subclass: every channel value is a blob)."""

    def __init__(self) -> None:
        super().__init__()
        self.dumped: list[Any] = []

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.dumped.append(obj)
        return super().dumps_typed(obj)


def test_a_value_sent_by_a_put_of_the_block_is_only_referenced_by_the_later_ones(
    pool: ConnectionPool[Any], pg_conn: psycopg.Connection[Any]
) -> None:
    serde = _CountingSerde()
    saver = PostgresSaver(pool, serde=serde)
    t = thread()
    big = ["b" * 600]
    first, versions = child(saver, None, {"big": big}, step=-1)
    second, second_versions = child(saver, first, {"n": 1})  # "big" unchanged
    with saver.pipelined(durable=False) as batch:
        c1 = batch.fenced().put(config(t), first, meta(-1), versions)
        c2 = batch.fenced().put(c1, second, meta(0), second_versions)
    assert batch.refused == {}
    assert sum(1 for value in serde.dumped if value is big) == 1
    assert count_rows(pg_conn, "blobs", t) == 2  # big, n
    found = saver.get_tuple(c2)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": big, "n": 1}


def test_array_parameters_arrive_as_sent(pg_conn: psycopg.Connection[Any]) -> None:
    register_arrays(pg_conn)
    ids = [uuid.uuid4(), None, uuid.uuid4()]
    sent = {
        "text": TextArray(["a", None, "", "é ☃ 雪", "x" * 5000]),
        "bytea": ByteaArray([b"\x00\x01", None, b"", b"z" * 70000]),
        "plain_bytea": ByteaArray([b"1", b"22"]),
        "uuid": UuidArray(ids),
        "int4": Int4Array([0, -1, 2**31 - 1, -(2**31)]),
        "bool": BoolArray([True, False]),
    }
    row = pg_conn.execute(
        "SELECT %(text)s::text[] AS a, %(bytea)s::bytea[] AS b, %(plain_bytea)s::bytea[] AS c,"
        " %(uuid)s::uuid[] AS d, %(int4)s::integer[] AS e, %(bool)s::boolean[] AS f",
        sent,
        binary=True,
    ).fetchone()
    assert row is not None
    assert list(row.values()) == [list(v.items) for v in sent.values()]


# -- durability: the WAL on a private server whose WAL writer is held -----------------------


@pytest.fixture(scope="module")
def server() -> Iterator[PrivatePostgres]:
    with private_postgres() as pg:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            migrate(conn)
        yield pg


_LSN: dict[str, LiteralString] = {
    "insert": "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn",
    "flush": "SELECT pg_current_wal_flush_lsn() - '0/0'::pg_lsn",
}


def _lsn(conn: psycopg.Connection[Any], which: str) -> int:
    row = conn.execute(_LSN[which]).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("read", [False, True], ids=["one statement", "a read inside"])
def test_a_durable_block_commits_with_the_wal_flushed_and_a_relaxed_one_without(
    server: PrivatePostgres, read: bool
) -> None:
    with (
        psycopg.connect(server.url, autocommit=True) as conn,
        psycopg.connect(server.url, autocommit=True) as observer,
        server.wal_writer_held(),
    ):
        saver = PostgresSaver(conn)
        flushed = {}
        for durable in (False, True):
            t = thread()
            checkpoint, versions = child(saver, None, {"a": [durable] * 300}, step=-1)
            start = _lsn(observer, "insert")
            with saver.pipelined(durable=durable) as batch:
                saved = batch.put(config(t), checkpoint, meta(-1), versions)
                batch.put_writes(saved, [("a", 1)], "task")
                if read:
                    assert batch.get_tuple(saved) is not None
            assert count_rows(observer, "writes", t) == 1  # committed: visible
            flushed[durable] = _lsn(observer, "flush") > start
        setting = conn.execute("SHOW synchronous_commit").fetchone()
    assert flushed == {False: False, True: True}
    assert setting is not None
    assert setting[0] == "on"  # the relaxed commit was the block's own
