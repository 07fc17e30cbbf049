"""Several processes on one database: task redelivery, fenced puts, migrations."""

from __future__ import annotations

import multiprocessing
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from checkpoint_pg import (
    PostgresSaver,
    SchemaVersionError,
    latest_version,
    migrate,
    schema_version,
)
from checkpoint_pg.errors import CheckpointStoreError
from checkpoint_pg.schema import check_schema, migrations
from tests.integration.checkpoint_pg import helpers
from tests.integration.checkpoint_pg.helpers import child, config, meta, thread

pytestmark = pytest.mark.integration

# spawn, not fork: the test process runs pool threads that a fork would copy mid-flight.
SPAWN = multiprocessing.get_context("spawn")


def test_concurrent_put_writes_of_one_task_leave_one_row_set(pg_url: str) -> None:
    t = thread()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        saver = PostgresSaver(conn)
        checkpoint, versions = child(saver, None, {}, step=-1)
        saved = saver.put(config(t), checkpoint, meta(-1), versions)
    tasks = [str(uuid.uuid4()) for _ in range(30)]
    barrier = SPAWN.Barrier(2)
    procs = [
        SPAWN.Process(
            target=helpers.deliver_writes,
            args=(pg_url, t, saved["configurable"]["checkpoint_id"], tasks, who, barrier),
        )
        for who in (1, 2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    with psycopg.connect(pg_url, autocommit=True) as conn:
        found = PostgresSaver(conn).get_tuple(saved)
    assert found is not None
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in found.pending_writes or []:
        by_task.setdefault(task_id, []).append((channel, value))
    assert sorted(by_task) == sorted(tasks)
    for task_id, writes in by_task.items():
        assert [c for c, _ in writes] == ["a", "b", "c"], task_id
        who = writes[0][1]
        assert writes == [("a", who), ("b", who), ("c", [who] * 100)], task_id


@pytest.mark.parametrize("pipelined", [False, True], ids=["put", "put_batch"])
def test_fenced_puts_from_processes_one_winner(pg_url: str, pipelined: bool) -> None:
    """Racing fenced puts of the same parent: one wins, the others write nothing. Both
    ways a put is stored: one put (graphruntime_put_checkpoint's fence, migration 2) and a
    ``pipelined`` block's ``put_batch``, which fences its puts inline (migration 5)."""
    t = thread()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        saver = PostgresSaver(conn)
        root, versions = child(saver, None, {"a": 0}, step=-1)
        saver.put(config(t), root, meta(-1), versions)
    n = 3
    barrier = SPAWN.Barrier(n)
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(
            target=helpers.fenced_put, args=(pg_url, t, root["id"], barrier, results, pipelined)
        )
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    winners = [o for o in outcomes if o != "conflict"]
    assert len(winners) == 1, outcomes
    with psycopg.connect(pg_url, autocommit=True, row_factory=dict_row) as conn:
        listed = [c.checkpoint["id"] for c in PostgresSaver(conn).list(config(t))]
        blobs = conn.execute(
            "SELECT count(*) AS n FROM graphruntime_blobs WHERE thread_id = %s", (t,)
        ).fetchone()
    assert listed == [winners[0], root["id"]]
    assert blobs is not None
    assert blobs["n"] == 1  # the losers wrote no blob either


def test_processes_migrate_at_once(fresh_db: str) -> None:
    # released together by the barrier: one applies the migrations, the others wait on its
    # lock and find nothing left to do (8 processes race as 20 did, for a third of the CPU)
    n = 8
    barrier = SPAWN.Barrier(n)
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(target=helpers.run_migrate, args=(fresh_db, barrier, results))
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    versions = [results.get(timeout=90) for _ in range(n)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert versions == [latest_version()] * n
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        rows = conn.execute("SELECT version FROM graphruntime_migrations ORDER BY 1").fetchall()
        assert [r[0] for r in rows] == list(range(1, latest_version() + 1))
        assert schema_version(conn) == latest_version()
        check_schema(conn)


def test_a_newer_schema_is_refused(fresh_db: str) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        assert schema_version(conn) == 0
        with pytest.raises(CheckpointStoreError, match=r"run PostgresSaver\.setup"):
            check_schema(conn)
        assert migrate(conn) == latest_version()
        newer = latest_version() + 1
        conn.execute("INSERT INTO graphruntime_migrations (version) VALUES (%s)", (newer,))
        with pytest.raises(SchemaVersionError, match=f"version {newer}.*Upgrade graphruntime"):
            migrate(conn)
        with pytest.raises(SchemaVersionError):
            PostgresSaver(conn).setup()
        with pytest.raises(SchemaVersionError):
            check_schema(conn)
        assert schema_version(conn) == newer


def test_migration_files_are_numbered_without_gaps() -> None:
    found = migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert found[0].name == "initial"
    assert latest_version() == len(found)
