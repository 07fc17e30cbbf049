"""PostgresSaver.hold_put / save_held: several threads' puts in one transaction."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from checkpoint_pg import PostgresSaver
from graphruntime.errors import CheckpointConflict
from tests.integration.checkpoint_pg.helpers import child, config, count_rows, meta, thread

pytestmark = pytest.mark.integration


@pytest.fixture
def saver(pg_conn: psycopg.Connection[Any]) -> PostgresSaver:
    return PostgresSaver(pg_conn).fenced().lazy()


def test_held_puts_of_several_threads_are_stored_in_order(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    runs, heads = [], []
    for n in range(3):
        t = thread()
        first, versions = child(saver, None, {"a": n}, step=-1)
        held1 = saver.hold_put([], config(t), first, meta(-1), versions)
        assert held1.config is not None
        second, versions = child(saver, first, {"a": n + 10, "big": ["x" * 400]})
        writes = [(held1.config, [("a", n + 10)], "task-1", "")]
        held2 = saver.hold_put(writes, held1.config, second, meta(0), versions)
        runs.append([held1, held2])
        heads.append((t, held2.config, n + 10))
    assert all(count_rows(pg_conn, "checkpoints", t) == 0 for t, _, _ in heads)  # held

    assert saver.save_held(runs) == [None, None, None]
    for t, head, value in heads:
        latest = saver.get_tuple(config(t))
        assert latest is not None
        assert latest.config == head
        assert latest.checkpoint["channel_values"] == {"a": value, "big": ["x" * 400]}
        parent = saver.get_tuple(latest.parent_config or {})
        assert parent is not None
        assert [(w[1], w[2]) for w in parent.pending_writes or []] == [("a", value)]


def test_a_refused_run_does_not_stop_the_others(
    saver: PostgresSaver, pg_conn: psycopg.Connection[Any]
) -> None:
    moved, fine = thread(), thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(moved), root, meta(-1), versions)
    stale, versions = child(saver, root, {"a": 2})
    refused = saver.hold_put([], head, stale, meta(0), versions)
    later, versions = child(saver, stale, {"a": 3})
    assert refused.config is not None
    refused_next = saver.hold_put([], refused.config, later, meta(1), versions)
    other, versions = child(saver, None, {"b": 1}, step=-1)
    kept = saver.hold_put([], config(fine), other, meta(-1), versions)
    # the thread moves on before the group is stored
    winner, versions = child(saver, root, {"a": 9})
    saver.put(head, winner, meta(0), versions)

    errors = saver.save_held([[refused, refused_next], [kept]])
    assert isinstance(errors[0], CheckpointConflict)
    assert errors[1] is None
    latest = saver.get_tuple(config(moved))
    assert latest is not None
    assert latest.checkpoint["id"] == winner["id"]
    assert count_rows(pg_conn, "checkpoints", moved) == 2  # root and the winner only
    assert count_rows(pg_conn, "checkpoints", fine) == 1


def test_writes_alone_are_held_too(saver: PostgresSaver, pg_conn: psycopg.Connection[Any]) -> None:
    t = thread()
    root, versions = child(saver, None, {"a": 1}, step=-1)
    head = saver.put(config(t), root, meta(-1), versions)
    held = saver.hold_put([(head, [("a", 5)], "task-1", "")], None)
    assert held.config is None
    assert count_rows(pg_conn, "writes", t) == 0
    assert saver.save_held([[held]]) == [None]
    latest = saver.get_tuple(config(t))
    assert latest is not None
    assert [(w[1], w[2]) for w in latest.pending_writes or []] == [("a", 5)]
