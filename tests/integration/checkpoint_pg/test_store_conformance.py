"""PostgresStore against the shared store contract, over a Connection and over a pool."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresStore
from graphruntime.store.base import BaseStore, InvalidStoreRequestError, TTLConfig
from graphruntime.testing.store_conformance import FakeClock, StoreConformance, StoreFactory

pytestmark = pytest.mark.integration


class _LangGraphSearchWithoutIndex:
    def test_search_without_index_refuses_query(self, store: BaseStore, root: str) -> None:
        # As LangGraph's PostgresStore: without an index the query is ignored (the
        # namespace's items, newest first, unscored); naming fields to embed is refused.
        store.put((root,), "a", {"text": "x"})
        store.put((root,), "b", {"text": "y"})
        found = store.search((root,), query="anything")
        assert [(i.key, i.score) for i in found] == [("b", None), ("a", None)]
        with pytest.raises(InvalidStoreRequestError, match="vector"):
            store.put((root,), "k", {"text": "x"}, index=["text"])
        store.put((root,), "k", {"text": "x"}, index=False)
        assert store.get((root,), "k") is not None


class TestPostgresStoreOnConnection(_LangGraphSearchWithoutIndex, StoreConformance):
    @pytest.fixture
    def make_store(self, pg_conn: psycopg.Connection[Any]) -> StoreFactory:
        def make(ttl: TTLConfig | None = None, clock: FakeClock | None = None) -> PostgresStore:
            return PostgresStore(pg_conn, ttl=ttl, clock=clock)

        return make


class TestPostgresStoreOnPool(_LangGraphSearchWithoutIndex, StoreConformance):
    @pytest.fixture
    def make_store(self, pg_pool: ConnectionPool[Any]) -> StoreFactory:
        def make(ttl: TTLConfig | None = None, clock: FakeClock | None = None) -> PostgresStore:
            return PostgresStore(pg_pool, ttl=ttl, clock=clock)

        return make
