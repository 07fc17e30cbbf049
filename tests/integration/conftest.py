"""Fixtures for tests that need a real Postgres.

The server is ``DATABASE_URL`` if set, else the embedded one (pgserver), started
by the first test that asks. Each test session (each xdist worker) gets its own
fresh, migrated database, dropped at the end; tests share it and keep apart by
using unique thread ids, so nothing is ever deleted between tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresCache, PostgresStore, migrate
from checkpoint_pg.embedded import database_url, scratch_database


@pytest.fixture(scope="session")
def server_url() -> str:
    """The Postgres server for this session (an admin connection string)."""
    return database_url()


@pytest.fixture(scope="session")
def pg_url(server_url: str) -> Iterator[str]:
    """A fresh database for this test session, migrated to the latest schema (store and
    cache too: a test may use any of them first)."""
    with scratch_database(server_url, "graphruntime_test") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            migrate(conn)
            PostgresStore(conn).setup()
            PostgresCache(conn).setup()
        yield url


@pytest.fixture
def fresh_db(server_url: str) -> Iterator[str]:
    """An empty database (no tables) for tests that create the schema themselves."""
    with scratch_database(server_url, "graphruntime_mig") as url:
        yield url


@pytest.fixture(scope="session")
def pg_pool(pg_url: str) -> Iterator[ConnectionPool[Any]]:
    """A pool of autocommit connections to the session database."""
    with ConnectionPool(
        pg_url,
        min_size=1,
        max_size=4,
        kwargs={"autocommit": True, "row_factory": dict_row},
    ) as pool:
        yield pool


@pytest.fixture
def pg_conn(pg_url: str) -> Iterator[psycopg.Connection[Any]]:
    """One autocommit connection to the session database, for this test."""
    with psycopg.connect(pg_url, autocommit=True, row_factory=dict_row) as conn:
        yield conn
