"""PostgresStore against the shared store contract, over a Connection and over a pool."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresStore
from graphruntime.store.base import TTLConfig
from graphruntime.testing.store_conformance import FakeClock, StoreConformance, StoreFactory

pytestmark = pytest.mark.integration


class TestPostgresStoreOnConnection(StoreConformance):
    @pytest.fixture
    def make_store(self, pg_conn: psycopg.Connection[Any]) -> StoreFactory:
        def make(ttl: TTLConfig | None = None, clock: FakeClock | None = None) -> PostgresStore:
            return PostgresStore(pg_conn, ttl=ttl, clock=clock)

        return make


class TestPostgresStoreOnPool(StoreConformance):
    @pytest.fixture
    def make_store(self, pg_pool: ConnectionPool[Any]) -> StoreFactory:
        def make(ttl: TTLConfig | None = None, clock: FakeClock | None = None) -> PostgresStore:
            return PostgresStore(pg_pool, ttl=ttl, clock=clock)

        return make
