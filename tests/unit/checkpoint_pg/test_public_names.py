"""checkpoint_pg's public names, pinned: LangGraph's Postgres packages map onto them."""

from __future__ import annotations

import checkpoint_pg
import checkpoint_pg.aio


def test_public_names() -> None:
    assert set(checkpoint_pg.__all__) == {
        "AsyncPostgresSaver",
        "AsyncPostgresStore",
        "CheckpointStoreError",
        "CheckpointStoreUnavailable",
        "PostgresCache",
        "PostgresIndexConfig",
        "PostgresSaver",
        "PostgresStore",
        "PruneResult",
        "SchemaVersionError",
        "ShallowPostgresSaver",
        "database_url",
        "is_connection_error",
        "missing_schema",
        "latest_version",
        "migrate",
        "schema_version",
    }
    assert set(checkpoint_pg.aio.__all__) == {
        "AsyncPostgresSaver",
        "AsyncPostgresStore",
        "AsyncShallowPostgresSaver",
    }
    for module in (checkpoint_pg, checkpoint_pg.aio):
        for name in module.__all__:
            assert hasattr(module, name), name


def test_langgraph_imports_swap_for_checkpoint_pg() -> None:
    # What `from langgraph.checkpoint.postgres[.aio] import X` and
    # `from langgraph.store.postgres[.aio] import X` give a user, by the same names.
    for name in ("PostgresSaver", "ShallowPostgresSaver", "PostgresStore"):
        assert hasattr(checkpoint_pg, name)
    for name in ("AsyncPostgresSaver", "AsyncShallowPostgresSaver", "AsyncPostgresStore"):
        assert hasattr(checkpoint_pg.aio, name)
    for cls in (checkpoint_pg.PostgresSaver, checkpoint_pg.aio.AsyncPostgresSaver):
        assert isinstance(cls.MIGRATIONS, tuple)
        assert all(isinstance(sql, str) and sql.strip() for sql in cls.MIGRATIONS)
    assert checkpoint_pg.PostgresStore.MIGRATIONS == checkpoint_pg.aio.AsyncPostgresStore.MIGRATIONS
