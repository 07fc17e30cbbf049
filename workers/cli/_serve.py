"""``graphrun serve``: the LangGraph Server API in front of the workers."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from workers.cli._output import JsonOption, console, fail, json_line
from workers.errors import WorkerError

ConfigArgument = Annotated[
    str, typer.Option("--config", help="The langgraph.json whose graphs the API serves.")
]


def serve(
    config: ConfigArgument = "langgraph.json",
    host: Annotated[
        str, typer.Option(help="Address to bind; beyond loopback it needs GRAPHRUNTIME_API_TOKEN.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 2024,
    as_json: Annotated[bool, JsonOption] = False,
) -> None:
    """Serve the LangGraph Server API (langgraph-sdk, RemoteGraph, Agent Chat UI, Agent
    Inbox): every run goes to the workers. Needs DATABASE_URL and REDIS_URL (or
    --embedded through GRAPHRUNTIME_EMBEDDED=1) and a migrated database. Exits as
    `graphrun worker` at start: 2 for a bad setting, 3 when a service does not answer."""
    try:
        from workers.api import api_context, check_bind
        from workers.api import serve as run_server
    except ImportError as exc:
        fail(
            f"graphrun serve needs the server extra (pip install 'graphruntime[server]'): {exc}", 2
        )
    from checkpoint_pg import CheckpointStoreError
    from workers.cli._output import reach_services
    from workers.config import apply_config
    from workers.settings import load_settings

    try:
        apply_config(config)  # its env first: the settings read next count it
        settings = load_settings()
        check_bind(host, settings.api_token)  # before connecting to anything
    except WorkerError as exc:
        fail(f"{type(exc).__name__}: {exc}", 2)
    # each answers, or exit 3 naming its setting (as `graphrun worker`)
    reach_services(postgres=True, redis=True, unreachable=3)
    try:
        ctx = api_context(settings, config)
    except (WorkerError, CheckpointStoreError) as exc:  # an unmigrated database: says so
        fail(f"{type(exc).__name__}: {exc}", 3)
    scope = "token required" if ctx.token else "loopback only, no token"
    url = f"http://{host}:{port}"
    if as_json:
        json_line({"url": url, "graphs": sorted(ctx.graphs), "token_required": bool(ctx.token)})
    else:
        console.print(
            f"LangGraph Server API on {url} ({scope}); graphs: {', '.join(sorted(ctx.graphs))}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    try:
        run_server(ctx, host=host, port=port)
    finally:
        ctx.client.close()
