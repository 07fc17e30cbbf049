"""What is specific to PostgresStore: the database clock, setup, connections, errors."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from checkpoint_pg import PostgresStore
from checkpoint_pg.aio import AsyncPostgresStore
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


def _fail_writes(conn: psycopg.Connection[Any], times: int) -> None:
    """The store's next ``times`` writes fail with a real serialization failure (SQLSTATE
    40001); a sequence counts every try, also those rolled back."""
    conn.execute("CREATE SEQUENCE store_tries")
    conn.execute(
        "CREATE FUNCTION store_conflict() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" IF nextval('store_tries') <= {int(times)} THEN"
        "  RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure';"
        " END IF; RETURN NEW; END $$"
    )
    conn.execute(
        "CREATE TRIGGER store_conflict BEFORE INSERT OR UPDATE ON graphruntime_store"
        " FOR EACH ROW EXECUTE FUNCTION store_conflict()"
    )


def _tries(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT last_value FROM store_tries").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("failures", [2, 3])
def test_a_serialization_failure_runs_the_batch_again_three_times_in_all(
    fresh_db: str, failures: int
) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        store = PostgresStore(conn)
        store.setup()
        _fail_writes(conn, failures)
        if failures < 3:  # the third run goes through
            store.put(("a",), "k", {"v": 1})
            item = store.get(("a",), "k")
            assert item is not None
            assert item.value == {"v": 1}
            assert _tries(conn) == 3
        else:  # the third run's error is the caller's
            with pytest.raises(StoreBackendError) as info:
                store.put(("a",), "k", {"v": 1})
            assert isinstance(info.value.__cause__, psycopg.errors.SerializationFailure)
            assert _tries(conn) == 3
            assert store.get(("a",), "k") is None


def test_the_async_store_runs_a_conflicting_batch_again_on_the_same_schedule(
    fresh_db: str,
) -> None:
    with psycopg.connect(fresh_db, autocommit=True) as conn:
        PostgresStore(conn).setup()
        _fail_writes(conn, 4)

        async def main() -> None:
            async with AsyncPostgresStore.from_conn_string(fresh_db) as store:
                with pytest.raises(StoreBackendError) as info:
                    await store.aput(("a",), "k", {"v": 1})  # tries 1-3
                assert isinstance(info.value.__cause__, psycopg.errors.SerializationFailure)
                await store.aput(("a",), "k", {"v": 2})  # fails once more, then goes through
                item = await store.aget(("a",), "k")
                assert item is not None
                assert item.value == {"v": 2}

        asyncio.run(main())
        assert _tries(conn) == 5
