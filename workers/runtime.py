"""Wiring: build a WorkerContext (pool, saver, store, registry) from settings."""

from __future__ import annotations

from workers.context import Dispatcher, WorkerContext
from workers.registry import GraphRegistry
from workers.settings import Settings
from workers.store import RunStore, make_pool


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    from checkpoint_pg.embedded import database_url as embedded

    return embedded()


def build_context(settings: Settings, dispatcher: Dispatcher) -> WorkerContext:
    from checkpoint_pg import PostgresSaver

    pool = make_pool(
        database_url(settings),
        max_size=settings.pool_max_size,
        prepare=settings.prepared_statements,
    )
    saver = PostgresSaver(pool)
    saver.setup()
    store = RunStore(pool)
    store.setup()
    return WorkerContext(
        settings=settings,
        registry=GraphRegistry.parse(settings.graphs),
        saver=saver,
        store=store,
        dispatcher=dispatcher,
    )
