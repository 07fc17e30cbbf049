"""Serving the API with uvicorn: the context from the settings and langgraph.json."""

from __future__ import annotations

from typing import Any

from workers._api_schema import API_MIGRATIONS
from workers.api._app import create_app
from workers.api._assistants import ensure_system_assistants
from workers.api._background import Background
from workers.api._context import ApiContext
from workers.api._guard import check_bind, check_token
from workers.settings import Settings


def api_context(settings: Settings, config_path: str, *, broker: Any = None) -> ApiContext:
    """A context for the graphs of ``config_path``: a client that loads no graph (the
    workers answer what needs one) and the API's tables, checked to be migrated."""
    from checkpoint_pg import PostgresStore
    from workers.client import GraphClient
    from workers.config import load_config
    from workers.runtime import connect

    loaded = load_config(config_path)
    graphs = loaded.descriptions()
    # no graph of the config is loaded here: GRAPHRUNTIME_CONFIG is for the workers
    # every request borrows connections; waits and streams hold none while they wait
    client_settings = settings.model_copy(
        update={"graphs": "", "config": None, "pool_max_size": max(settings.pool_max_size, 16)}
    )
    wiring = connect(client_settings, broker=broker)
    client = GraphClient(
        settings=wiring.settings,
        registry=wiring.registry,
        saver=wiring.saver,
        store=wiring.store,
        broker=wiring.broker,
    )
    client.known_graphs = set(graphs)
    pool = wiring.store.pool  # type: ignore[attr-defined]
    API_MIGRATIONS.check_schema(pool)
    ctx = ApiContext(
        client=client,
        graphs=graphs,
        token=check_token(settings.api_token),
        cors_origins=tuple(o.strip() for o in settings.api_cors_origins.split(",") if o.strip()),
        node_store=PostgresStore(pool),
    )
    ctx.extra["webhook_secret"] = settings.webhook_secret
    ensure_system_assistants(ctx)
    return ctx


def serve(
    ctx: ApiContext, *, host: str = "127.0.0.1", port: int = 2024, log_level: str = "info"
) -> None:
    """Serve until interrupted; refuses a non-loopback address without a token."""
    import logging

    import uvicorn

    check_bind(host, ctx.token)
    if not logging.getLogger().handlers:  # refusals and failures, beside uvicorn's lines
        logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    background = Background(ctx)
    background.start()
    try:
        uvicorn.run(
            create_app(ctx),
            host=host,
            port=port,
            log_level=log_level,
            proxy_headers=False,
            timeout_graceful_shutdown=5,
        )
    finally:
        background.stop()
