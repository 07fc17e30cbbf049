"""What is specific to PostgresStore: the database clock, setup, connections, errors."""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from checkpoint_pg import PostgresStore
from checkpoint_pg.store import STORE_MIGRATIONS
from graphruntime.store.base import InvalidStoreRequestError, StoreBackendError

pytestmark = pytest.mark.integration


def _root() -> str:
    return f"pgstore-{uuid.uuid4().hex[:12]}"


def test_items_expire_on_the_database_clock(pg_conn: psycopg.Connection[Any]) -> None:
    store = PostgresStore(pg_conn)
    root = _root()
    ttl_minutes = 0.01  # 0.6 s
    store.put((root,), "k", {"v": 1}, ttl=ttl_minutes)
    time.sleep(ttl_minutes * 60 + 0.3)
    assert store.get((root,), "k") is None
    assert store.sweep_ttl() >= 1


def test_setup_records_its_own_migrations(fresh_db: str) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        assert STORE_MIGRATIONS.schema_version(conn) == 0
        store = PostgresStore(conn)
        store.setup()
        store.setup()  # idempotent
        assert STORE_MIGRATIONS.schema_version(conn) == STORE_MIGRATIONS.latest_version() >= 1
        STORE_MIGRATIONS.check_schema(conn)
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        }
        # The store's tables only: the checkpoint tables have their own migrations.
        assert tables == {"graphruntime_store", "graphruntime_store_migrations"}


def test_a_missing_table_is_a_backend_error(fresh_db: str) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        store = PostgresStore(conn)
        with pytest.raises(StoreBackendError, match="graphruntime_store") as info:
            store.get(("a",), "k")
        assert isinstance(info.value.__cause__, psycopg.Error)
        # The failed batch's transaction was rolled back: the connection still works.
        store.setup()
        assert store.get(("a",), "k") is None


def test_from_conn_string_with_a_connection_and_a_pool(pg_url: str) -> None:
    root = _root()
    with PostgresStore.from_conn_string(pg_url) as store:
        store.put((root,), "k", {"v": 1})
        store.start_ttl_sweeper(sweep_interval_minutes=10)
    with PostgresStore.from_conn_string(
        pg_url, pool_config={"min_size": 1, "max_size": 2}
    ) as pooled:
        item = pooled.get((root,), "k")
        assert item is not None
        assert item.value == {"v": 1}
    with (
        pytest.raises(InvalidStoreRequestError, match="pool_config"),
        PostgresStore.from_conn_string(pg_url, pool_config={"size": 3}),  # type: ignore[arg-type]
    ):
        pass


def test_a_connection_without_autocommit_is_refused(pg_url: str) -> None:
    with (
        psycopg.connect(pg_url, row_factory=dict_row) as conn,
        pytest.raises(ValueError, match="autocommit"),
    ):
        PostgresStore(conn)


def test_values_are_jsonb_objects_in_the_table(pg_conn: psycopg.Connection[Any]) -> None:
    store = PostgresStore(pg_conn)
    root = _root()
    store.put((root, "n"), "k", {"b": [1, 2.5], "a": {"x": None}}, ttl=5)
    row = pg_conn.execute(
        "SELECT value, jsonb_typeof(value) AS kind, ttl_minutes, expires_at > now() AS live "
        "FROM graphruntime_store WHERE prefix = %s AND key = 'k'",
        (f"{root}.n",),
    ).fetchone()
    assert row is not None
    assert row["value"] == {"b": [1, 2.5], "a": {"x": None}}
    assert row["kind"] == "object"
    assert row["ttl_minutes"] == 5
    assert row["live"] is True
