"""``graphrun worker`` and ``graphrun db migrate``."""

from __future__ import annotations

import enum
import os
from typing import Annotated

import typer

from workers.cli._output import JsonOption, console, fail, json_line
from workers.errors import WorkerError

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)


class Role(enum.StrEnum):
    all = "all"
    coordinator = "coordinator"
    tasks = "tasks"


EmbeddedOption = Annotated[
    bool,
    typer.Option(
        "--embedded",
        help="Start (or join) embedded Postgres and Redis when DATABASE_URL / REDIS_URL are "
        "unset: development only (GRAPHRUNTIME_EMBEDDED=1 does the same).",
    ),
]


ConfigOption = Annotated[
    str | None,
    typer.Option(
        "--config",
        help="A langgraph.json: its graphs are served too, its env and dependencies apply "
        "(GRAPHRUNTIME_CONFIG does the same).",
    ),
]


def embedded_mode(embedded: bool) -> None:
    if embedded:
        os.environ["GRAPHRUNTIME_EMBEDDED"] = "1"


def use_config(config: str | None) -> None:
    """Check the langgraph.json now (exit 2 saying what is wrong) and pass it on to the
    processes started from here."""
    if config is None:
        return
    from workers.config import load_config

    try:
        loaded = load_config(config)
    except WorkerError as exc:
        fail(f"{type(exc).__name__}: {exc}", 2)
    os.environ["GRAPHRUNTIME_CONFIG"] = str(loaded.path)


def worker(
    concurrency: Annotated[int, typer.Option(min=1, help="Processes in this worker.")] = 2,
    role: Annotated[
        Role, typer.Option(help="Which queues: both, only coordinator runs, or only task jobs.")
    ] = Role.all,
    queues: Annotated[
        str | None, typer.Option(help="Comma-separated queues to consume (overrides --role).")
    ] = None,
    hostname: Annotated[
        str | None,
        typer.Option(
            help="Celery node name, e.g. coord1@%h, so that workers sharing a host are told "
            "apart in Flower (default: celery@<host>, what the health checks ping)."
        ),
    ] = None,
    loglevel: Annotated[str, typer.Option()] = "INFO",
    embedded: EmbeddedOption = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Log JSON lines (GRAPHRUNTIME_LOG_FORMAT=json).")
    ] = False,
    config: ConfigOption = None,
) -> None:
    """Start a Celery worker for coordinator runs and task jobs (both queues by default).

    It refuses to start without DATABASE_URL and REDIS_URL (unless --embedded), and exits
    non-zero when a GRAPHRUNTIME_GRAPHS entry cannot be loaded.
    """
    embedded_mode(embedded)
    use_config(config)
    if as_json:
        chosen = os.environ.get("GRAPHRUNTIME_LOG_FORMAT", "json").strip() or "json"
        if chosen != "json":
            fail(f"--json asks for JSON logs, but GRAPHRUNTIME_LOG_FORMAT={chosen!r}", 2)
        os.environ["GRAPHRUNTIME_LOG_FORMAT"] = "json"
    from workers.app import redis_url
    from workers.runtime import database_url
    from workers.settings import load_settings

    try:
        settings = load_settings()
        database_url(settings)
        redis_url(settings)
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    from workers.app import app as celery_app

    by_role = {
        Role.all: f"{settings.coordinator_queue},{settings.task_queue}",
        Role.coordinator: settings.coordinator_queue,
        Role.tasks: settings.task_queue,
    }
    argv = [
        "worker",
        f"--concurrency={concurrency}",
        f"--queues={queues or by_role[role]}",
        f"--loglevel={loglevel}",
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    celery_app.worker_main(argv)


@db_app.command("migrate")
def migrate(embedded: EmbeddedOption = False, as_json: Annotated[bool, JsonOption] = False) -> None:
    """Apply pending migrations (checkpoints, run bookkeeping, the nodes' store and cache);
    safe from many hosts."""
    embedded_mode(embedded)
    from checkpoint_pg import CheckpointStoreError
    from checkpoint_pg import migrate as migrate_checkpoints
    from checkpoint_pg.cache import CACHE_MIGRATIONS
    from checkpoint_pg.store import STORE_MIGRATIONS
    from workers._sql import MIGRATIONS
    from workers.api.schema import API_MIGRATIONS
    from workers.runtime import database_url
    from workers.settings import load_settings
    from workers.store import make_pool

    try:
        pool = make_pool(database_url(load_settings()))
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    try:
        checkpoints = migrate_checkpoints(pool)
        workers = MIGRATIONS.migrate(pool)
        store = STORE_MIGRATIONS.migrate(pool)
        cache = CACHE_MIGRATIONS.migrate(pool)
        api = API_MIGRATIONS.migrate(pool)
    except CheckpointStoreError as exc:  # SchemaVersionError too: says what to do
        fail(f"{type(exc).__name__}: {exc}", 1)
    finally:
        pool.close()
    if as_json:
        json_line(
            {
                "checkpoint_pg": checkpoints,
                "workers": workers,
                "store": store,
                "cache": cache,
                "api": api,
            }
        )
        return
    console.print(f"checkpoint_pg schema: version {checkpoints}")
    console.print(f"workers schema: version {workers}")
    console.print(f"store schema: version {store}")
    console.print(f"cache schema: version {cache}")
    console.print(f"api schema: version {api}")
    console.print("[green]database is up to date[/green]")
