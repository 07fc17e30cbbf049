"""Wiring: a WorkerContext (pool, saver, store, registry, broker) from settings.

Connecting runs no migration and starts no service: migrations run through
``graphrun db migrate`` (or ``PostgresSaver.setup()`` / ``PostgresRunStore.setup()``);
embedded services start only in embedded mode (``GRAPHRUNTIME_EMBEDDED=1``), and
say so on stderr.
"""

from __future__ import annotations

from graphruntime.checkpoint import JsonSerializer, parse_allowed_classes
from graphruntime.errors import SerializationError
from workers.config import registry_for
from workers.context import WorkerContext
from workers.dispatch import Broker
from workers.errors import ConfigurationError
from workers.services import database_url
from workers.settings import Settings
from workers.store import PostgresRunStore, make_pool


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
        pin=pool.pinned,
    )
