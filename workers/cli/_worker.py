"""``graphrun worker`` and ``graphrun db migrate``."""

from __future__ import annotations

from typing import Annotated

import typer

from workers.cli._output import console, fail
from workers.errors import WorkerError

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)


def worker(
    concurrency: Annotated[int, typer.Option(help="Processes in this worker.")] = 2,
    queues: Annotated[str | None, typer.Option(help="Comma-separated queues to consume.")] = None,
    loglevel: Annotated[str, typer.Option()] = "INFO",
) -> None:
    """Start a Celery worker for coordinator runs and task jobs (both queues by default)."""
    from workers.app import app as celery_app

    settings = celery_app.conf.graphruntime_settings
    queue_list = queues or f"{settings.coordinator_queue},{settings.task_queue}"
    celery_app.worker_main(
        [
            "worker",
            f"--concurrency={concurrency}",
            f"--queues={queue_list}",
            f"--loglevel={loglevel}",
            "--pool=prefork",
            "--without-gossip",
            "--without-mingle",
        ]
    )


@db_app.command("migrate")
def migrate() -> None:
    """Apply pending migrations (checkpoints and run bookkeeping); safe from many hosts."""
    from checkpoint_pg import CheckpointStoreError
    from checkpoint_pg import migrate as migrate_checkpoints
    from workers._sql import MIGRATIONS
    from workers.runtime import database_url
    from workers.settings import Settings
    from workers.store import make_pool

    try:
        pool = make_pool(database_url(Settings()))
    except WorkerError as exc:  # ConfigurationError: says what to set
        fail(f"{type(exc).__name__}: {exc}", 2)
    try:
        checkpoints = migrate_checkpoints(pool)
        workers = MIGRATIONS.migrate(pool)
    except CheckpointStoreError as exc:  # SchemaVersionError too: says what to do
        fail(f"{type(exc).__name__}: {exc}", 1)
    finally:
        pool.close()
    console.print(f"checkpoint_pg schema: version {checkpoints}")
    console.print(f"workers schema: version {workers}")
    console.print("[green]database is up to date[/green]")
