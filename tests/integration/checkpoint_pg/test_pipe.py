"""PostgresSaver(conn, pipe=...): the saver's statements in the caller's pipeline, and
``batched()``: several threads' puts and writes sent with one sync, committed once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from checkpoint_pg import PostgresSaver
from graphruntime.errors import CheckpointConflict, CheckpointError
from tests.integration.checkpoint_pg.helpers import child, config, count_rows, meta, thread

pytestmark = pytest.mark.integration


@pytest.fixture
def piped(pg_url: str) -> Iterator[tuple[psycopg.Connection[Any], PostgresSaver]]:
    with psycopg.connect(pg_url, autocommit=True) as conn, conn.pipeline() as pipe:
        yield conn, PostgresSaver(conn, pipe)


class _Syncs:
    """Counts the syncs of the caller's pipeline."""

    def __init__(self, saver: PostgresSaver) -> None:
        assert saver.pipe is not None
        self.count = 0
        pipe, sync = saver.pipe, saver.pipe.sync

        def counted() -> None:
            self.count += 1
            sync()

        pipe.sync = counted  # type: ignore[method-assign]


def test_each_call_syncs_the_callers_pipeline(
    piped: tuple[psycopg.Connection[Any], PostgresSaver], pg_conn: psycopg.Connection[Any]
) -> None:
    _, saver = piped
    syncs = _Syncs(saver)
    t = thread()
    checkpoint, versions = child(saver, None, {"big": ["x" * 300]})
    saved = saver.put(config(t), checkpoint, meta(0), versions)
    saver.put_writes(saved, [("a", 1)], "task")
    assert syncs.count == 2
    assert count_rows(pg_conn, "writes", t) == 1  # committed: another connection sees it
    found = saver.get_tuple(config(t))
    assert found is not None
    assert found.pending_writes == [("task", "a", 1)]


def test_batched_puts_of_several_threads_go_with_one_sync(
    piped: tuple[psycopg.Connection[Any], PostgresSaver], pg_conn: psycopg.Connection[Any]
) -> None:
    conn, saver = piped
    syncs = _Syncs(saver)
    threads = [thread() for _ in range(5)]
    with conn.transaction(), saver.batched() as batch:
        for t in threads:
            checkpoint, versions = child(saver, None, {"big": ["x" * 300, t]})
            saved = batch.put(config(t), checkpoint, meta(0), versions)
            batch.put_writes(saved, [("a", t)], "task")
        assert syncs.count == 0  # nothing waited for the server yet
        assert count_rows(pg_conn, "checkpoints", threads[0]) == 0
    assert syncs.count == 1
    for t in threads:
        found = saver.get_tuple(config(t))
        assert found is not None
        assert found.checkpoint["channel_values"] == {"big": ["x" * 300, t]}
        assert found.pending_writes == [("task", "a", t)]


def test_a_refused_fenced_put_in_a_batch_stores_none_of_it(
    piped: tuple[psycopg.Connection[Any], PostgresSaver], pg_conn: psycopg.Connection[Any]
) -> None:
    conn, saver = piped
    stale = thread()
    first, versions = child(saver, None, {"n": 1}, step=0)
    head = saver.put(config(stale), first, meta(0), versions)
    winner, versions = child(saver, first, {"n": 2}, step=1)
    saver.put(head, winner, meta(1), versions, fenced=True)
    fresh = thread()
    checkpoint, versions = child(saver, None, {"n": 1})
    loser, loser_versions = child(saver, first, {"n": 3}, step=2)

    def both() -> None:
        with conn.transaction(), saver.batched() as batch:
            batch.put(config(fresh), checkpoint, meta(0), versions)
            batch.put(head, loser, meta(1), loser_versions, fenced=True)  # head moved on

    with pytest.raises(CheckpointConflict):
        both()
    assert count_rows(pg_conn, "checkpoints", fresh) == 0  # the transaction took it back
    assert count_rows(pg_conn, "checkpoints", stale) == 2


def test_batched_needs_a_pipeline(pg_conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(CheckpointError, match="pipe="), PostgresSaver(pg_conn).batched():
        pass
