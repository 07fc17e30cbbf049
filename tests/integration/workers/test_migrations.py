"""The workers' tables move by numbered migrations of their own (real Postgres).

They use checkpoint_pg's migration runner with their own files, migrations table and
advisory lock, so the two versions are independent. Databases set up by the old
idempotent ``workers/sql/schema.sql`` (kept as a fixture in ``data/``) must migrate
without losing a row.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any, LiteralString

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row
from typer.testing import CliRunner

import checkpoint_pg
from checkpoint_pg import CheckpointStoreError, SchemaVersionError
from checkpoint_pg.cache import CACHE_MIGRATIONS
from checkpoint_pg.schema import CHECKPOINT_MIGRATIONS, Migrations
from checkpoint_pg.store import STORE_MIGRATIONS
from workers._api_schema import API_MIGRATIONS
from workers._sql import MIGRATIONS
from workers.cli import app
from workers.store import PostgresRunStore, RunPayload, make_pool

pytestmark = pytest.mark.integration

# Trusted test data, not input: run as the old code ran it.
OLD_SCHEMA: LiteralString = (
    Path(__file__).parent / "data" / "schema_before_migrations.sql"
).read_text("utf-8")
WORKER_TABLES = (
    "graphruntime_run_events",
    "graphruntime_runs",
    "graphruntime_step_tasks",
    "graphruntime_steps",
    "graphruntime_threads",
    "graphruntime_workers",
)
RUN_ID = "00000000-0000-4000-8000-000000000001"


def connect(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True, row_factory=dict_row)


def catalog(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """The workers' tables as Postgres describes them: columns, constraints, indexes."""
    with connect(url) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, ordinal_position, data_type, is_nullable,"
            " column_default FROM information_schema.columns"
            " WHERE table_schema = 'public' AND table_name = ANY(%s)"
            " ORDER BY table_name, ordinal_position",
            (list(WORKER_TABLES),),
        ).fetchall()
        constraints = conn.execute(
            "SELECT conrelid::regclass::text AS table_name, conname,"
            " pg_get_constraintdef(oid) AS definition FROM pg_constraint"
            " WHERE conrelid::regclass::text = ANY(%s) ORDER BY 1, 2",
            (list(WORKER_TABLES),),
        ).fetchall()
        indexes = conn.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes"
            " WHERE schemaname = 'public' AND tablename = ANY(%s) ORDER BY 1, 2",
            (list(WORKER_TABLES),),
        ).fetchall()
    return {
        "columns": [tuple(r.values()) for r in columns],
        "constraints": [tuple(r.values()) for r in constraints],
        "indexes": [tuple(r.values()) for r in indexes],
    }


def recorded(url: str, table: str = "graphruntime_workers_migrations") -> list[tuple[Any, ...]]:
    with connect(url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT version, applied_at FROM {} ORDER BY version").format(
                sql.Identifier(table)
            )
        ).fetchall()
    return [(r["version"], r["applied_at"]) for r in rows]


def old_setup(url: str) -> None:
    """What RunStore.setup() did before the migrations: schema.sql under lock (4242, 1)."""
    with connect(url) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(4242, 1)")
        conn.execute(OLD_SCHEMA, prepare=False)


# A run's payload as the first workers stored it: a plain dict, with no version.
OLD_PAYLOAD = (
    b'{"input": {"x": 1}, "config": {"configurable": {"thread_id": "t-old"}},'
    b' "stream_modes": ["values"], "subgraphs": false, "interrupt_before": null,'
    b' "interrupt_after": ["a"]}'
)


def add_rows(url: str) -> None:
    """One run with a step, a task and an event, as the old workers wrote them."""
    with connect(url) as conn:
        conn.execute(
            "INSERT INTO graphruntime_runs (run_id, thread_id, graph, status, kind,"
            " payload_type, payload, idempotency_key)"
            " VALUES (%s, 't-old', 'chain', 'running', 'input', 'json', %s, 'k-1')",
            (RUN_ID, OLD_PAYLOAD),
        )
        conn.execute(
            "INSERT INTO graphruntime_steps (run_id, checkpoint_id, open_tasks)"
            " VALUES (%s, 'c-1', 1)",
            (RUN_ID,),
        )
        conn.execute(
            "INSERT INTO graphruntime_step_tasks (run_id, checkpoint_id, task_id, thread_id,"
            " status, task_path, retry_attempts) VALUES (%s, 'c-1', 'task-1', 't-old',"
            " 'dispatched', '[\"__pregel_pull\", \"a\"]', 2)",
            (RUN_ID,),
        )
        conn.execute(
            "INSERT INTO graphruntime_run_events (run_id, ns, mode, payload_type, payload)"
            " VALUES (%s, '', 'values', 'json', %s)",
            (RUN_ID, b'{"x": 1}'),
        )


def test_the_workers_migration_files_are_numbered_without_gaps() -> None:
    found = MIGRATIONS.migrations()
    assert [m.version for m in found] == list(range(1, len(found) + 1))
    assert found[0].name == "initial"
    assert MIGRATIONS.latest_version() == len(found)
    assert MIGRATIONS.table != CHECKPOINT_MIGRATIONS.table
    assert MIGRATIONS.lock_key != CHECKPOINT_MIGRATIONS.lock_key


def test_migrations_tables_must_be_plain_identifiers() -> None:
    with pytest.raises(ValueError, match="lower-case identifiers"):
        Migrations(
            "workers", table='x"; DROP TABLE y; --', lock_key="k", component="c", setup_hint=""
        )


def test_a_fresh_database_migrates_to_the_latest_workers_version(fresh_db: str) -> None:
    with connect(fresh_db) as conn:
        assert MIGRATIONS.schema_version(conn) == 0
        with pytest.raises(CheckpointStoreError, match="graphrun db migrate"):
            MIGRATIONS.check_schema(conn)
    pool = make_pool(fresh_db)
    try:
        PostgresRunStore(pool).setup()
    finally:
        pool.close()
    latest = MIGRATIONS.latest_version()
    assert [v for v, _ in recorded(fresh_db)] == list(range(1, latest + 1))
    with connect(fresh_db) as conn:
        assert MIGRATIONS.schema_version(conn) == latest
        MIGRATIONS.check_schema(conn)
        # Independent of the checkpoint tables: those are still unmigrated.
        assert checkpoint_pg.schema_version(conn) == 0
        assert checkpoint_pg.migrate(conn) == checkpoint_pg.latest_version()
        assert MIGRATIONS.schema_version(conn) == latest
    tables = catalog(fresh_db)
    step_task_columns = {c[1] for c in tables["columns"] if c[0] == "graphruntime_step_tasks"}
    assert {"started_at", "hold_until", "task_path", "retry_attempts", "error"} <= step_task_columns
    assert {c[0] for c in tables["columns"]} == set(WORKER_TABLES)
    assert {i[1] for i in tables["indexes"]} >= {
        "graphruntime_runs_idempotency",
        "graphruntime_runs_one_resume",
        "graphruntime_runs_active",
        "graphruntime_runs_status",
        "graphruntime_step_tasks_open",
        "graphruntime_run_events_run",
    }


def test_migrating_twice_changes_nothing(fresh_db: str) -> None:
    with connect(fresh_db) as conn:
        assert MIGRATIONS.migrate(conn) == MIGRATIONS.latest_version()
    first, before = recorded(fresh_db), catalog(fresh_db)
    with connect(fresh_db) as conn:
        assert MIGRATIONS.migrate(conn) == MIGRATIONS.latest_version()
    assert recorded(fresh_db) == first  # same rows, same applied_at: nothing re-applied
    assert catalog(fresh_db) == before


def test_concurrent_migrations_apply_once(fresh_db: str) -> None:
    n = 6
    barrier = threading.Barrier(n)
    versions: list[int] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with connect(fresh_db) as conn:
                barrier.wait(timeout=30)
                versions.append(MIGRATIONS.migrate(conn))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert versions == [MIGRATIONS.latest_version()] * n
    assert [v for v, _ in recorded(fresh_db)] == list(range(1, MIGRATIONS.latest_version() + 1))


def test_a_database_set_up_by_the_old_schema_sql_migrates_and_keeps_its_rows(
    fresh_db: str, server_url: str
) -> None:
    old_setup(fresh_db)
    old_setup(fresh_db)  # it was applied at every start: still idempotent
    add_rows(fresh_db)
    with connect(fresh_db) as conn:
        assert MIGRATIONS.schema_version(conn) == 0
    pool = make_pool(fresh_db)
    try:
        store = PostgresRunStore(pool)
        store.setup()
        run = store.get_run(RUN_ID)
    finally:
        pool.close()
    assert [v for v, _ in recorded(fresh_db)] == list(range(1, MIGRATIONS.latest_version() + 1))
    assert run.thread_id == "t-old"
    assert run.status == "running"
    assert run.payload_error is None
    assert run.payload == RunPayload(
        input={"x": 1},
        config={"configurable": {"thread_id": "t-old"}},
        stream_modes=("values",),
        interrupt_after=["a"],
    )
    with connect(fresh_db) as conn:
        # the thread is bound to the graph of its first run
        bound = conn.execute(
            "SELECT graph FROM graphruntime_threads WHERE thread_id = 't-old'"
        ).fetchall()
    assert bound == [{"graph": run.graph}]
    with connect(fresh_db) as conn:
        task = conn.execute(
            "SELECT status, task_path, retry_attempts FROM graphruntime_step_tasks"
            " WHERE run_id = %s",
            (RUN_ID,),
        ).fetchall()
        steps = conn.execute(
            "SELECT open_tasks FROM graphruntime_steps WHERE run_id = %s", (RUN_ID,)
        ).fetchall()
        events = conn.execute(
            "SELECT mode FROM graphruntime_run_events WHERE run_id = %s", (RUN_ID,)
        ).fetchall()
    assert task == [
        {"status": "dispatched", "task_path": ["__pregel_pull", "a"], "retry_attempts": 2}
    ]
    assert steps == [{"open_tasks": 1}]
    assert events == [{"mode": "values"}]

    # The migrated tables are exactly what a fresh database gets.
    name = f"graphruntime_wmig_ref_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    reference = make_conninfo(server_url, dbname=name)
    try:
        with connect(reference) as conn:
            MIGRATIONS.migrate(conn)
        assert catalog(fresh_db) == catalog(reference)
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_database_from_an_older_schema_sql_gets_the_later_columns(fresh_db: str) -> None:
    # Before the leases, sweeper re-sends and retries, schema.sql had no such columns.
    old_setup(fresh_db)
    with connect(fresh_db) as conn:
        conn.execute(
            "ALTER TABLE graphruntime_step_tasks DROP COLUMN started_at,"
            " DROP COLUMN lease_until, DROP COLUMN task_path, DROP COLUMN retry_attempts"
        )
        conn.execute(
            "INSERT INTO graphruntime_step_tasks (run_id, checkpoint_id, task_id, thread_id,"
            " status) VALUES (%s, 'c-1', 'task-1', 't-older', 'done')",
            (RUN_ID,),
        )
        MIGRATIONS.migrate(conn)
        rows = conn.execute(
            "SELECT thread_id, status, task_path, retry_attempts, hold_until"
            " FROM graphruntime_step_tasks"
        ).fetchall()
    assert rows == [
        {
            "thread_id": "t-older",
            "status": "done",
            "task_path": None,
            "retry_attempts": 0,
            "hold_until": None,
        }
    ]


def test_a_newer_workers_schema_is_refused(fresh_db: str) -> None:
    with connect(fresh_db) as conn:
        latest = MIGRATIONS.migrate(conn)
        newer = latest + 1
        conn.execute("INSERT INTO graphruntime_workers_migrations (version) VALUES (%s)", (newer,))
        expected = (
            rf"workers schema is at version {newer} \(graphruntime_workers_migrations\).*"
            rf"up to {latest}.*Upgrade graphruntime \(workers\) on this host"
        )
        with pytest.raises(SchemaVersionError, match=expected):
            MIGRATIONS.migrate(conn)
        with pytest.raises(SchemaVersionError, match=expected):
            MIGRATIONS.check_schema(conn)
        assert MIGRATIONS.schema_version(conn) == newer
        # The checkpoint tables have their own version: unaffected.
        assert checkpoint_pg.migrate(conn) == checkpoint_pg.latest_version()
    pool = make_pool(fresh_db)
    try:
        with pytest.raises(SchemaVersionError, match=expected):
            PostgresRunStore(pool).setup()
    finally:
        pool.close()
    result = CliRunner().invoke(app, ["db", "migrate"], env={"DATABASE_URL": fresh_db})
    assert result.exit_code == 1
    assert "SchemaVersionError" in result.output
    assert "Upgrade graphruntime (workers)" in " ".join(result.output.split())


def test_cli_db_migrate_migrates_both_and_prints_both_versions(fresh_db: str) -> None:
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(app, ["db", "migrate"], env={"DATABASE_URL": fresh_db})
        assert result.exit_code == 0, result.output
        assert f"checkpoint_pg schema: version {checkpoint_pg.latest_version()}" in result.output
        assert f"workers schema: version {MIGRATIONS.latest_version()}" in result.output
    with connect(fresh_db) as conn:
        CHECKPOINT_MIGRATIONS.check_schema(conn)
        MIGRATIONS.check_schema(conn)
    assert len(recorded(fresh_db, "graphruntime_migrations")) == checkpoint_pg.latest_version()
    as_json = runner.invoke(app, ["db", "migrate", "--json"], env={"DATABASE_URL": fresh_db})
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == {
        "checkpoint_pg": checkpoint_pg.latest_version(),
        "workers": MIGRATIONS.latest_version(),
        "store": STORE_MIGRATIONS.latest_version(),
        "cache": CACHE_MIGRATIONS.latest_version(),
        "api": API_MIGRATIONS.latest_version(),
    }
