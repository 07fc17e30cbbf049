"""PostgresSaver against the shared saver contract, over a Connection and over a pool."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from checkpoint_pg import PostgresSaver
from graphruntime.testing.conformance import ClusterSaverConformance

pytestmark = pytest.mark.integration


class TestPostgresSaverOnConnection(ClusterSaverConformance):
    @pytest.fixture
    def saver(self, pg_conn: psycopg.Connection[Any]) -> PostgresSaver:
        return PostgresSaver(pg_conn)


class TestPostgresSaverOnPool(ClusterSaverConformance):
    @pytest.fixture
    def saver(self, pg_pool: ConnectionPool[Any]) -> PostgresSaver:
        return PostgresSaver(pg_pool)
