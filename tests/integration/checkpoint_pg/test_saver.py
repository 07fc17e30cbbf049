"""PostgresSaver beyond the shared contract: fencing, storage layout, ids, errors."""

from __future__ import annotations

import os
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import CheckpointStoreError, PostgresSaver
from graphruntime.errors import CheckpointConflict, CheckpointError
from tests.integration.checkpoint_pg.helpers import (
    blob_deleted_behind_the_saver,
    child,
    config,
    count_rows,
    meta,
    thread,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def saver(pg_conn: psycopg.Connection[Any]) -> PostgresSaver:
    return PostgresSaver(pg_conn)


# -- fencing ---------------------------------------------------------------------------


def test_fenced_put_advances_from_the_head(saver: PostgresSaver) -> None:
    t = thread()
    first, versions = child(saver, None, {"a": 1}, step=-1)
    c1 = saver.put(config(t), first, meta(-1), versions, fenced=True)
    second, versions = child(saver, first, {"a": 2})
    c2 = saver.put(c1, second, meta(0), versions, fenced=True)
    latest = saver.get_tuple(config(t))
    assert latest is not None
    assert latest.config == c2
    assert latest.parent_config == c1


def test_stale_fenced_put_raises_and_writes_nothing(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    t = thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(t), root, meta(-1), versions)
    winner, versions = child(saver, root, {"a": 2, "big": ["w" * 400]})
    won = saver.put(head, winner, meta(0), versions, fenced=True)
    before = {table: count_rows(pg_conn, table, t) for table in ("checkpoints", "blobs")}

    stale, versions = child(saver, root, {"a": 3, "big": ["s" * 400]})
    with pytest.raises(CheckpointConflict, match="Another writer advanced the thread") as info:
        saver.put(head, stale, meta(0), versions, fenced=True)
    assert winner["id"] in str(info.value)
    assert {table: count_rows(pg_conn, table, t) for table in ("checkpoints", "blobs")} == before
    assert saver.get_tuple(config(t, checkpoint_id=stale["id"])) is None
    latest = saver.get_tuple(config(t))
    assert latest is not None
    assert latest.config == won
    assert latest.checkpoint["channel_values"] == {"a": 2, "big": ["w" * 400]}


def test_fenced_put_on_a_started_thread_needs_its_head(saver: PostgresSaver) -> None:
    t = thread()
    first, versions = child(saver, None, {"a": 1}, step=-1)
    saver.put(config(t), first, meta(-1), versions)
    other, versions = child(saver, None, {"a": 9}, step=-1)
    with pytest.raises(CheckpointConflict, match="none \\(a new thread\\)"):
        saver.put(config(t), other, meta(-1), versions, fenced=True)


def test_retrying_the_winning_fenced_put_succeeds(saver: PostgresSaver) -> None:
    t = thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(t), root, meta(-1), versions)
    nxt, versions = child(saver, root, {"a": 2})
    first = saver.put(head, nxt, meta(0), versions, fenced=True)
    # The reply was lost, the caller retries the very same put: not a conflict.
    assert saver.put(head, nxt, meta(0), versions, fenced=True) == first


def test_fenced_put_refuses_an_id_older_than_its_parent(saver: PostgresSaver) -> None:
    t = thread()
    early, versions = child(saver, None, {"a": 1}, step=-1)
    root, root_versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(t), root, meta(-1), root_versions)
    with pytest.raises(CheckpointError, match="clock"):
        saver.put(head, early, meta(0), versions, fenced=True)


def test_fenced_view_fences_plain_puts(saver: PostgresSaver) -> None:
    t = thread()
    view = saver.fenced()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = view.put(config(t), root, meta(-1), versions)
    a, versions = child(saver, root, {"a": 2})
    view.put(head, a, meta(0), versions)
    b, versions = child(saver, root, {"a": 3})
    with pytest.raises(CheckpointConflict):
        view.put(head, b, meta(0), versions)
    saver.put(head, b, meta(0), versions)  # the saver itself still forks
    assert view.get_tuple(config(t)) is not None


def test_fencing_is_per_namespace(saver: PostgresSaver) -> None:
    t = thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    saver.put(config(t), root, meta(-1), versions)
    sub, versions = child(saver, None, {"a": 1}, step=-1)
    saver.put(config(t, "sub:1"), sub, meta(-1), versions, fenced=True)


def test_plain_put_still_forks_an_old_checkpoint(saver: PostgresSaver) -> None:
    t = thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(t), root, meta(-1), versions)
    a, versions = child(saver, root, {"a": 2})
    saver.put(head, a, meta(0), versions, fenced=True)
    fork, versions = child(saver, root, {"a": 3})
    forked = saver.put(head, fork, meta(0, source="fork"), versions)
    found = saver.get_tuple(forked)
    assert found is not None
    assert found.parent_config == head
    assert found.checkpoint["channel_values"] == {"a": 3}


def test_concurrent_fenced_puts_one_winner(pg_pool: ConnectionPool[Any]) -> None:
    import threading

    saver = PostgresSaver(pg_pool)
    t = thread()
    root, versions = child(saver, None, {"a": 0}, step=-1)
    head = saver.put(config(t), root, meta(-1), versions)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def contend(i: int) -> None:
        checkpoint, new_versions = child(saver, root, {"a": i, "big": [str(i) * 300]})
        barrier.wait()
        try:
            saver.put(head, checkpoint, meta(0), new_versions, fenced=True)
            outcomes.append(checkpoint["id"])
        except CheckpointConflict:
            outcomes.append("conflict")

    workers = [threading.Thread(target=contend, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    winners = [o for o in outcomes if o != "conflict"]
    assert len(winners) == 1, outcomes
    assert [t.checkpoint["id"] for t in saver.list(config(t))] == [winners[0], root["id"]]


# -- what is stored ------------------------------------------------------------------------


def test_values_survive_too_few_new_versions(pg_url: str) -> None:
    """A caller that under-reports new_versions costs a serialization, never a value."""
    t = thread()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        saver = PostgresSaver(conn)
        first, versions = child(saver, None, {"big": ["x" * 500], "n": 1}, step=-1)
        c1 = saver.put(config(t), first, meta(-1), versions)
        second, _ = child(saver, first, {"big": ["y" * 500], "n": 2})
        c2 = saver.put(c1, second, meta(0), {})
        with psycopg.connect(pg_url, autocommit=True) as other:
            cold = PostgresSaver(other)  # knows no blob: must send what it cannot vouch for
            third, _ = child(cold, second, {"big": ["z" * 500]})
            c3 = cold.put(c2, third, meta(1), {})
        for cfg, big in ((c1, "x"), (c2, "y"), (c3, "z")):
            found = saver.get_tuple(cfg)
            assert found is not None
            assert found.checkpoint["channel_values"]["big"] == [big * 500]


def test_a_blob_deleted_behind_the_savers_back_is_resent(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    c1, second, versions = blob_deleted_behind_the_saver(saver, pg_conn)
    c2 = saver.put(c1, second, meta(0), versions)
    found = saver.get_tuple(c2)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"big": ["x" * 500], "n": 1}


def test_small_values_stay_inline_and_large_ones_are_stored_once(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    t = thread()
    cfg, prev = config(t), None
    for step in range(4):
        # "big" changes only in the first step; "small" changes every step.
        values: dict[str, Any] = {"small": [step]} if prev else {"small": [0], "big": "b" * 5000}
        prev, versions = child(saver, prev, values, step=step)
        cfg = saver.put(cfg, prev, meta(step), versions)
    assert count_rows(pg_conn, "blobs", t) == 1
    assert count_rows(pg_conn, "checkpoints", t) == 4
    found = saver.get_tuple(cfg)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"small": [3], "big": "b" * 5000}


def test_ten_megabyte_value_round_trips(saver: PostgresSaver) -> None:
    big = {"text": "é" * 3_000_000 + "end", "raw": os.urandom(3_000_000), "n": list(range(10))}
    checkpoint, versions = child(saver, None, {"big": big}, step=-1)
    saved = saver.put(config(thread()), checkpoint, meta(-1), versions)
    saver.put_writes(saved, [("big", big)], task_id="task")
    found = saver.get_tuple(saved)
    assert found is not None
    assert found.checkpoint["channel_values"]["big"] == big
    assert found.pending_writes == [("task", "big", big)]


def test_delete_thread_removes_every_row_of_every_namespace(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    t, other = thread(), thread()
    for tid in (t, other):
        for ns in ("", "sub:1", "sub:1|inner:2"):
            checkpoint, versions = child(saver, None, {"big": ["v" * 400]}, step=-1)
            saved = saver.put(config(tid, ns), checkpoint, meta(-1), versions)
            saver.put_writes(saved, [("a", 1)], task_id="task")
    saver.delete_thread(t)
    assert [count_rows(pg_conn, table, t) for table in ("checkpoints", "blobs", "writes")] == [
        0,
        0,
        0,
    ]
    assert [count_rows(pg_conn, table, other) for table in ("checkpoints", "blobs", "writes")] == [
        3,
        3,
        3,
    ]


def test_metadata_filter_is_equality_not_containment(saver: PostgresSaver) -> None:
    t = thread()
    stored = {"tags": ["a", "b"], "info": {"x": 1, "y": 2}, "pair": (1, 2), "none": None}
    checkpoint, versions = child(saver, None, {}, step=-1)
    saver.put(config(t), checkpoint, meta(-1, **stored), versions)

    def matches(**flt: Any) -> bool:
        return len(list(saver.list(config(t), filter=flt))) == 1

    assert matches(tags=["a", "b"], info={"x": 1, "y": 2})
    assert matches(pair=(1, 2), none=None, step=-1)
    assert not matches(tags=["a"])
    assert not matches(tags=["b", "a"])
    assert not matches(info={"x": 1})
    assert not matches(pair=[1, 2])
    assert not matches(missing=None)


def test_list_pages_through_long_threads(saver: PostgresSaver) -> None:
    t = thread()
    cfg, prev, ids = config(t), None, []
    for step in range(230):  # more than two pages
        prev, versions = child(saver, prev, {"n": step}, step=step)
        cfg = saver.put(cfg, prev, meta(step), versions)
        ids.append(prev["id"])
    assert [c.checkpoint["id"] for c in saver.list(config(t))] == ids[::-1]
    assert [c.checkpoint["id"] for c in saver.list(config(t), limit=150)] == ids[::-1][:150]


def test_ids_that_are_not_uuids(saver: PostgresSaver) -> None:
    t = thread()
    assert saver.get_tuple(config(t, checkpoint_id="not-a-uuid")) is None
    assert list(saver.list(config(t, checkpoint_id="not-a-uuid"))) == []
    with pytest.raises(CheckpointError, match="UUID"):
        list(saver.list(config(t), before=config(t, checkpoint_id="nope")))
    checkpoint, versions = child(saver, None, {}, step=-1)
    checkpoint["id"] = "custom-id"
    with pytest.raises(CheckpointError, match="UUID"):
        saver.put(config(t), checkpoint, meta(-1), versions)


def test_a_parent_id_that_is_not_a_uuid_round_trips(saver: PostgresSaver) -> None:
    # LangGraph's own tests name parents "1", "2": the id goes in the checkpoint's body.
    t = thread()
    checkpoint, versions = child(saver, None, {"n": 1}, step=-1)
    saved = saver.put(config(t, checkpoint_id="1"), checkpoint, meta(-1), versions)
    found = saver.get_tuple(saved)
    assert found is not None
    assert found.parent_config == config(t, checkpoint_id="1")
    assert "__parent_id__" not in found.checkpoint
    assert [c.parent_config for c in saver.list(config(t))] == [config(t, checkpoint_id="1")]
    other, versions = child(saver, None, {"n": 2}, step=0)
    with pytest.raises(CheckpointError, match="UUID"):
        saver.put(config(t, checkpoint_id="1"), other, meta(0), versions, fenced=True)


def test_database_errors_are_checkpoint_store_errors(saver: PostgresSaver) -> None:
    checkpoint, versions = child(saver, None, {}, step=-1)
    # JSONB cannot hold U+0000 (only top-level strings lose theirs, as in LangGraph);
    # the driver's error is the cause.
    with pytest.raises(CheckpointStoreError, match=r"PostgresSaver\.put failed") as info:
        saver.put(config(thread()), checkpoint, meta(-1, note={"deep": "a\x00b"}), versions)
    assert isinstance(info.value.__cause__, psycopg.Error)


def test_connection_must_be_autocommit(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn, pytest.raises(ValueError, match="autocommit=True"):
        PostgresSaver(conn)
    with pytest.raises(TypeError, match=r"Connection or psycopg_pool\.ConnectionPool"):
        PostgresSaver("postgresql://nowhere")  # type: ignore[arg-type]


def test_from_conn_string_and_setup_are_idempotent(pg_url: str) -> None:
    with PostgresSaver.from_conn_string(pg_url) as saver:
        saver.setup()
        saver.setup()
        checkpoint, versions = child(saver, None, {"a": 1}, step=-1)
        saved = saver.put(config(thread()), checkpoint, meta(-1), versions)
        assert saver.get(saved) is not None


def test_a_task_with_more_writes_than_one_statement_takes(saver: PostgresSaver) -> None:
    """A router sending 10,000 tasks: more rows than Postgres' parameter limit allows."""
    t = thread()
    checkpoint, versions = child(saver, None, {}, step=-1)
    cfg = saver.put(config(t), checkpoint, meta(-1), versions)
    writes = [("__pregel_tasks", {"i": i}) for i in range(10_000)]
    saver.put_writes(cfg, writes, "00000000-0000-0000-0000-0000000000aa")
    saved = saver.get_tuple(cfg)
    assert saved is not None
    assert [v for _, _, v in saved.pending_writes or []] == [{"i": i} for i in range(10_000)]


def test_get_tuples_reads_several_threads_as_get_tuple_does(saver: PostgresSaver) -> None:
    a, b = thread(), thread()
    first, versions = child(saver, None, {"a": 1}, step=-1)
    ca = saver.put(config(a), first, meta(-1), versions)
    saver.put_writes(ca, [("a", 5)], "task-1")
    second, versions = child(saver, first, {"a": 2})
    saver.put(ca, second, meta(0), versions)
    other, versions = child(saver, None, {"b": 1}, step=-1)
    saver.put(config(b), other, meta(-1), versions)
    configs = [
        config(a),
        config(thread()),  # no such thread
        config(b),
        ca,  # an older checkpoint, by id, with its writes
        config(a, checkpoint_id="not-a-uuid"),
    ]
    assert saver.get_tuples(configs) == [saver.get_tuple(c) for c in configs]
    assert saver.get_tuples([]) == []
