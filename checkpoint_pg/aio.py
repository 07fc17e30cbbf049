"""The async saver and store, as ``langgraph.checkpoint.postgres.aio`` and
``langgraph.store.postgres.aio`` expose them::

    from checkpoint_pg.aio import AsyncPostgresSaver, AsyncPostgresStore

    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        app = graph.compile(checkpointer=saver)

Both run on psycopg's ``AsyncConnection`` or ``AsyncConnectionPool``; on a pool,
concurrent calls run in parallel.
"""

from __future__ import annotations

from checkpoint_pg._async_saver import AsyncPostgresSaver
from checkpoint_pg._async_store import AsyncPostgresStore
from checkpoint_pg._shallow import AsyncShallowPostgresSaver

__all__ = ("AsyncPostgresSaver", "AsyncPostgresStore", "AsyncShallowPostgresSaver")
