"""On Postgres: heartbeats record their Celery node and served graphs (workers migration
5), the overview counts nodes, and a worker's start-up schema check says what is behind."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from checkpoint_pg.embedded import scratch_database
from workers._sql import MIGRATIONS
from workers.errors import ConfigurationError
from workers.heartbeat import Heartbeat, unserved_reason
from workers.services import all_migrations, check_schemas
from workers.store import PostgresRunStore, make_pool

pytestmark = pytest.mark.integration


@pytest.fixture
def migrated(server_url: str) -> Iterator[str]:
    with scratch_database(server_url, "graphruntime_nodes") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            for migrations in all_migrations().values():
                migrations.migrate(conn)
        yield url


def test_heartbeats_carry_node_and_graphs_and_the_overview_counts_nodes(migrated: str) -> None:
    pool = make_pool(migrated)
    try:
        store = PostgresRunStore(pool)
        for pid, node in ((1, "w0@h"), (2, "w0@h"), (3, "w1@h")):
            Heartbeat(store, f"h:{pid}", 5.0, node=node, graphs=["chain", "fan"]).beat()
        Heartbeat(store, "client:h:9:x", 5.0).beat()
        overview = store.overview(10.0)
        assert (overview.workers, overview.processes) == (2, 3)
        nodes = {(w["node"], tuple(w["graphs"] or ())) for w in store.live_workers(10.0)}
        assert ("w0@h", ("chain", "fan")) in nodes
        assert unserved_reason(store, "fan", 10.0, waited=60.0) is None
        assert "No live worker serves graph 'other'" in str(
            unserved_reason(store, "other", 10.0, waited=60.0)
        )
    finally:
        pool.close()


def test_check_schemas_passes_when_migrated_and_names_what_is_behind(
    migrated: str, server_url: str
) -> None:
    check_schemas(migrated)
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute(
            "DELETE FROM graphruntime_workers_migrations WHERE version = %s",
            (MIGRATIONS.latest_version(),),
        )
    latest = MIGRATIONS.latest_version()
    with pytest.raises(ConfigurationError, match=f"workers at version {latest - 1} of {latest}"):
        check_schemas(migrated)
    with psycopg.connect(migrated, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO graphruntime_workers_migrations (version) VALUES (%s), (%s)",
            (latest, latest + 1),
        )
    with pytest.raises(ConfigurationError, match="migrated by a newer release"):
        check_schemas(migrated)
