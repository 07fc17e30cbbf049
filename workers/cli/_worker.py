"""``graphrun worker`` and ``graphrun db migrate``."""

from __future__ import annotations

import enum
import os
from typing import Annotated

import typer

from workers.cli._output import JsonOption, console, fail, json_line, reach_services
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
    """Check the langgraph.json now (exit 2 saying what is wrong), apply its env (the
    settings read next count it) and pass it on to the processes started from here."""
    if config is None:
        return
    from workers.config import apply_config

    try:
        loaded = apply_config(config)
    except WorkerError as exc:
        fail(f"{type(exc).__name__}: {exc}", 2)
    os.environ["GRAPHRUNTIME_CONFIG"] = str(loaded.path)


def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1, help="Processes in this worker (default: GRAPHRUNTIME_CONCURRENCY, 2)."
        ),
    ] = None,
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

    Before it takes work it checks, naming the setting: DATABASE_URL and REDIS_URL are set
    (unless --embedded) and well formed (exit 2), Postgres and Redis answer within
    GRAPHRUNTIME_CONNECT_TIMEOUT seconds, the database is migrated (`graphrun db migrate`;
    workers never migrate by themselves) and every GRAPHRUNTIME_GRAPHS entry imports
    (exit 3 otherwise).
    """
    embedded_mode(embedded)
    use_config(config)
    if as_json:
        chosen = os.environ.get("GRAPHRUNTIME_LOG_FORMAT", "json").strip() or "json"
        if chosen != "json":
            fail(f"--json asks for JSON logs, but GRAPHRUNTIME_LOG_FORMAT={chosen!r}", 2)
        os.environ["GRAPHRUNTIME_LOG_FORMAT"] = "json"
    from workers.services import check_urls
    from workers.settings import load_settings

    try:
        settings = load_settings()
        check_urls(settings)
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
        f"--concurrency={concurrency or settings.concurrency}",
        f"--queues={queues or by_role[role]}",
        f"--loglevel={loglevel}",
        "--pool=prefork",
        "--without-gossip",
        "--without-mingle",
    ]
    if hostname:
        argv.append(f"--hostname={hostname}")
    celery_app.worker_main(argv)


@db_app.command("migrate", short_help="Apply pending migrations; safe from many hosts.")
def migrate(embedded: EmbeddedOption = False, as_json: Annotated[bool, JsonOption] = False) -> None:
    """Apply pending migrations (checkpoints, run bookkeeping, the nodes' store and cache);
    safe from many hosts."""
    embedded_mode(embedded)
    from checkpoint_pg import CheckpointStoreError
    from workers.services import all_migrations
    from workers.store import make_pool

    url, _ = reach_services(postgres=True, redis=False)
    pool = make_pool(url)
    try:
        versions = {name: m.migrate(pool) for name, m in all_migrations().items()}
    except CheckpointStoreError as exc:  # SchemaVersionError too: says what to do
        fail(f"{type(exc).__name__}: {exc}", 1)
    finally:
        pool.close()
    if as_json:
        json_line(versions)
        return
    for name, version in versions.items():
        console.print(f"{name} schema: version {version}", markup=False, highlight=False)
    console.print("[green]database is up to date[/green]")
