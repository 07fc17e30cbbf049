"""The Postgres run store keeps driver errors inside the workers' error tree, classified
by SQLSTATE: a refusal is a fault (the job fails), a lost server an outage (it retries)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from checkpoint_pg import is_connection_error
from checkpoint_pg.embedded import scratch_database
from graphruntime.checkpoint import JsonSerializer
from graphruntime.config import RunnableConfig
from workers.errors import RunStoreError, StoreUnavailableError, WorkerError, is_transient
from workers.store import PostgresRunStore, RunQuery, make_pool

pytestmark = pytest.mark.integration


@pytest.fixture
def store(server_url: str) -> Iterator[tuple[PostgresRunStore, str]]:
    with scratch_database(server_url, "graphruntime_store_errors") as url:
        pool = make_pool(url, max_size=1, check_idle=3600)
        run_store = PostgresRunStore(pool, JsonSerializer())
        run_store.setup()
        try:
            yield run_store, url
        finally:
            pool.close()


def test_a_statement_the_server_refuses_is_a_store_error_not_an_outage(
    store: tuple[PostgresRunStore, str],
) -> None:
    run_store, _ = store
    with pytest.raises(RunStoreError) as caught:
        run_store.list_runs(RunQuery(limit=-1))  # LIMIT must not be negative: 2201W
    assert not isinstance(caught.value, StoreUnavailableError)
    assert isinstance(caught.value, WorkerError)
    assert not is_transient(caught.value)
    assert "list_runs failed" in str(caught.value)
    assert isinstance(caught.value.__cause__, psycopg.Error)
    assert run_store.list_runs(RunQuery(limit=1)) == []  # the pool's connection still works


def test_a_connection_the_server_dropped_is_an_outage(store: tuple[PostgresRunStore, str]) -> None:
    run_store, url = store
    run_store.list_runs(RunQuery(limit=1))
    with psycopg.connect(url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert killed is not None
    assert killed[0] >= 1
    with pytest.raises(StoreUnavailableError) as caught:
        run_store.list_runs(RunQuery(limit=1))
    assert is_transient(caught.value)
    assert "could not reach Postgres" in str(caught.value)
    assert run_store.list_runs(RunQuery(limit=1)) == []  # the pool replaced the connection


@pytest.mark.parametrize(
    ("exc", "outage"),
    [
        (psycopg.errors.ConnectionFailure("lost"), True),  # 08006
        (psycopg.errors.AdminShutdown("restart"), True),  # 57P01
        (psycopg.errors.TooManyConnections("full"), True),  # 53300
        (psycopg.errors.SerializationFailure("retry"), True),  # 40001
        (psycopg.OperationalError("no SQLSTATE: the client lost the connection"), True),
        (PoolTimeout("no connection in 30 s"), True),
        (psycopg.errors.ProgramLimitExceeded("index row too big"), False),  # 54000
        (psycopg.errors.UniqueViolation("duplicate"), False),
        (psycopg.errors.UndefinedTable("no such table"), False),
        (ValueError("not a driver error"), False),
    ],
)
def test_outages_are_told_from_refusals_by_sqlstate(exc: BaseException, outage: bool) -> None:
    assert is_connection_error(exc) is outage


def test_a_client_migrates_nothing_and_an_unmigrated_database_says_what_to_run(
    server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.client import GraphClient
    from workers.runtime import connect
    from workers.settings import load_settings
    from workers.testing import InlineBroker

    def tables(url: str) -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
            ).fetchone()
        assert row is not None
        return int(row[0])

    with scratch_database(server_url, "graphruntime_unmigrated") as url:
        monkeypatch.setenv("DATABASE_URL", url)
        monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
        monkeypatch.setenv(
            "GRAPHRUNTIME_GRAPHS", "approvals=examples.approval_graphs:approval_graph"
        )
        ctx = connect(load_settings(), broker=InlineBroker())
        client = GraphClient(
            settings=ctx.settings,
            registry=ctx.registry,
            saver=ctx.saver,
            store=ctx.store,
            broker=ctx.broker,
        )
        try:
            assert tables(url) == 0
            cfg: RunnableConfig = {"configurable": {"thread_id": "t"}}
            with pytest.raises(RunStoreError, match="graphrun db migrate"):
                client.submit("approvals", {"items": []}, cfg)
            with pytest.raises(Exception, match="graphrun db migrate") as caught:
                client.get_state("approvals", cfg)
            assert not is_transient(caught.value)
            assert tables(url) == 0
        finally:
            client.close()
