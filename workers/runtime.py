"""Wiring: a WorkerContext (pool, saver, store, registry, broker) from settings.

Connecting runs no migration and starts no service: migrations run through
``graphrun db migrate`` (or ``PostgresSaver.setup()`` / ``PostgresRunStore.setup()``);
embedded services start only in embedded mode (``GRAPHRUNTIME_EMBEDDED=1``), and
say so on stderr.
"""

from __future__ import annotations

import sys

from graphruntime.checkpoint import JsonSerializer, parse_allowed_classes
from graphruntime.errors import SerializationError
from workers.config import registry_for
from workers.context import WorkerContext
from workers.dispatch import Broker
from workers.errors import ConfigurationError
from workers.settings import Settings
from workers.store import PostgresRunStore, make_pool


def database_url(settings: Settings) -> str:
    """``DATABASE_URL``, or the embedded Postgres in embedded mode; else an error."""
    if settings.database_url:
        return settings.database_url
    if settings.embedded:
        from checkpoint_pg.embedded import data_dir, embedded_url

        url = embedded_url()
        sys.stderr.write(
            f"graphruntime: using the embedded Postgres in {data_dir() / 'pg'} (development only)\n"
        )
        return url
    raise ConfigurationError(
        "DATABASE_URL is not set: point it at Postgres (e.g. postgresql://user@host/db), or "
        "set GRAPHRUNTIME_EMBEDDED=1 to start an embedded Postgres for development."
    )


def worker_serde(settings: Settings) -> JsonSerializer:
    """The strict serializer runs are stored with: built-in kinds, the registered graphs'
    schema classes (added as each graph loads) and ``GRAPHRUNTIME_SERDE_ALLOW``."""
    try:
        return JsonSerializer(
            strict=True, allowed_classes=parse_allowed_classes(settings.serde_allow)
        )
    except SerializationError as exc:
        raise ConfigurationError(f"GRAPHRUNTIME_SERDE_ALLOW: {exc}") from exc


def connect(settings: Settings, *, broker: Broker | None = None) -> WorkerContext:
    """Everything a worker or client needs; the broker defaults to Celery's. Graphs
    compiled with a store or a cache get the Postgres ones every worker shares."""
    from checkpoint_pg import PostgresCache, PostgresSaver, PostgresStore

    serde = worker_serde(settings)
    registry = registry_for(settings)
    registry.use_serde(serde)
    if broker is None:
        from workers.app import CeleryBroker, create_app

        broker = CeleryBroker(create_app(settings), settings)
    pool = make_pool(
        database_url(settings),
        max_size=settings.pool_max_size,
        prepare=settings.prepared_statements,
    )
    registry.use_store(PostgresStore(pool))
    registry.use_cache(PostgresCache(pool, serde=serde))
    return WorkerContext(
        settings=settings,
        registry=registry,
        saver=PostgresSaver(pool, serde=serde),
        store=PostgresRunStore(pool, serde),
        broker=broker,
    )
