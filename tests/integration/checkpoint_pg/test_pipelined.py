"""PostgresSaver.pipelined(): several threads' puts and writes in one transaction on a
connection of the saver's own, committed together; a refused fenced put stops only its
thread."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresSaver
from graphruntime._internal._constants import INTERRUPT
from graphruntime.errors import CheckpointConflict, CheckpointError
from tests.integration.checkpoint_pg.helpers import child, config, count_rows, meta, thread

pytestmark = pytest.mark.integration


def test_puts_and_writes_of_several_threads_are_stored_together(
    saver: PostgresSaver, pool: ConnectionPool[Any], pg_conn: psycopg.Connection[Any]
) -> None:
    heads = []
    with saver.pipelined(durable=False) as batch:
        for n in range(3):
            t = thread()
            first, versions = child(saver, None, {"a": n}, step=-1)
            saved = batch.fenced().put(config(t), first, meta(-1), versions)
            batch.put_writes(saved, [("a", n + 10)], "task-1")
            second, versions = child(saver, first, {"a": n + 10, "big": ["x" * 400]})
            head = batch.fenced().put(saved, second, meta(0), versions)
            heads.append((t, head, n + 10))
        # nothing committed before the block ends: another connection sees none of it
        assert all(count_rows(pg_conn, "checkpoints", t) == 0 for t, _, _ in heads)
    assert batch.refused == {}
    for t, head, value in heads:
        latest = saver.get_tuple(config(t))
        assert latest is not None
        assert latest.config == head
        assert latest.checkpoint["channel_values"] == {"a": value, "big": ["x" * 400]}
        parent = saver.get_tuple(latest.parent_config or {})
        assert parent is not None
        assert [(w[1], w[2]) for w in parent.pending_writes or []] == [("a", value)]
    # the relaxed commit was the transaction's own: the connection is as it was
    with pool.connection() as conn:
        setting = conn.execute("SHOW synchronous_commit").fetchone()
    assert setting is not None
    assert setting[0] == "on"


def test_a_refused_thread_does_not_stop_the_others(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    moved, fine = thread(), thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(moved), root, meta(-1), versions)
    winner, winner_versions = child(saver, root, {"a": 9})
    saver.put(head, winner, meta(0), winner_versions)  # the thread moved on
    stale, versions = child(saver, root, {"a": 2})
    later, later_versions = child(saver, stale, {"a": 3})
    other, other_versions = child(saver, None, {"b": 1}, step=-1)
    with saver.pipelined(durable=False) as batch:
        fenced = batch.fenced()
        refused = fenced.put(head, stale, meta(0), versions)
        fenced.put(refused, later, meta(1), later_versions)
        batch.put(config(fine), other, meta(-1), other_versions)
    assert set(batch.refused) == {moved}
    assert isinstance(batch.refused[moved], CheckpointConflict)
    latest = saver.get_tuple(config(moved))
    assert latest is not None
    assert latest.checkpoint["id"] == winner["id"]
    assert count_rows(pg_conn, "checkpoints", moved) == 2  # root and the winner only
    assert count_rows(pg_conn, "checkpoints", fine) == 1


def test_fenced_puts_of_threads_taking_turns_are_judged_each_against_its_own_head(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    """Puts of three threads in turns (a, b, a, b, c): each fenced put is judged against
    its thread's head as the block left it; a retried put that already won is no
    conflict; a stale one is refused with its child, and the others are stored."""
    a, b, c = thread(), thread(), thread()
    b_root, versions = child(saver, None, {"b": 1}, step=-1)
    b_head = saver.put(config(b), b_root, meta(-1), versions)
    b_winner, winner_versions = child(saver, b_root, {"b": 9})
    saver.put(b_head, b_winner, meta(0), winner_versions)  # b moved on
    b_stale, stale_versions = child(saver, b_root, {"b": 2})
    b_later, later_versions = child(saver, b_stale, {"b": 3})
    a_first, a_versions = child(saver, None, {"a": 1}, step=-1)
    a_second, a_second_versions = child(saver, a_first, {"a": 2, "big": ["y" * 600]})
    c_first, c_versions = child(saver, None, {"c": 1}, step=-1)
    retried = saver.put(config(c), c_first, meta(-1), c_versions)
    with saver.pipelined(durable=False) as batch:
        fenced = batch.fenced()
        a_saved = fenced.put(config(a), a_first, meta(-1), a_versions)
        refused = fenced.put(b_head, b_stale, meta(0), stale_versions)
        a_head = fenced.put(a_saved, a_second, meta(0), a_second_versions)
        fenced.put(refused, b_later, meta(1), later_versions)
        assert fenced.put(config(c), c_first, meta(-1), c_versions) == retried
    assert set(batch.refused) == {b}
    assert isinstance(batch.refused[b], CheckpointConflict)
    assert str(b_winner["id"]) in str(batch.refused[b])  # the head it saw
    latest = saver.get_tuple(config(a))
    assert latest is not None
    assert latest.config == a_head
    assert latest.checkpoint["channel_values"] == {"a": 2, "big": ["y" * 600]}
    assert [count_rows(pg_conn, "checkpoints", t) for t in (a, b, c)] == [2, 2, 1]
    b_latest = saver.get_tuple(config(b))
    assert b_latest is not None
    assert b_latest.checkpoint["id"] == b_winner["id"]


def test_an_error_in_the_block_stores_none_of_it(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    t = thread()
    first, versions = child(saver, None, {"a": 1}, step=-1)

    def put_then_fail() -> None:
        with saver.pipelined() as batch:
            batch.put(config(t), first, meta(-1), versions)
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        put_then_fail()
    assert count_rows(pg_conn, "checkpoints", t) == 0
    assert saver.get_tuple(config(t)) is None


def test_pipelined_needs_a_saver_without_a_callers_pipeline(
    pg_conn: psycopg.Connection[Any],
) -> None:
    with pg_conn.pipeline() as pipe:
        piped = PostgresSaver(pg_conn, pipe)
        with pytest.raises(CheckpointError, match="batched"), piped.pipelined():
            pass


def test_a_blocks_writes_are_stored_as_put_writes_stores_them_one_by_one(
    saver: PostgresSaver,
) -> None:
    """Insert-only rows of several tasks share statements; control writes (upserts)
    keep their order and replace the stored row; the first write of a row wins."""
    t = thread()
    first, versions = child(saver, None, {}, step=-1)
    root = saver.put(config(t), first, meta(-1), versions)
    sub_first, sub_versions = child(saver, None, {})
    sub = saver.put(config(t, "sub:1"), sub_first, meta(-1), sub_versions)
    saver.put_writes(root, [("a", 0)], task_id="t1")
    with saver.pipelined(durable=False) as batch:
        batch.put_writes(root, [("a", 1), ("b", 2)], "t1", "p1")  # row 0 exists: kept
        batch.put_writes(root, [(INTERRUPT, "x")], "t2", "p2")
        batch.put_writes(sub, [("c", 3)], "t3", "p3")
        batch.put_writes(root, [(INTERRUPT, "y")], "t2", "p2")  # control writes replace
        inside = batch.get_tuple(root)  # a read in the block sees the block's writes
    assert inside is not None
    expected = [("t1", "a", 0), ("t1", "b", 2), ("t2", INTERRUPT, "y")]
    assert [(w[0], w[1], w[2]) for w in inside.pending_writes or []] == expected
    found = saver.get_tuple(root)
    assert found is not None
    assert [(w[0], w[1], w[2]) for w in found.pending_writes or []] == expected
    found_sub = saver.get_tuple(sub)
    assert found_sub is not None
    assert [(w[0], w[1], w[2]) for w in found_sub.pending_writes or []] == [("t3", "c", 3)]
