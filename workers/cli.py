"""``graphrun``: run workers, migrate the database, resume threads, inspect runs."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from workers.errors import WorkerError

app = typer.Typer(
    help="graphruntime on Celery: workers, migrations, resumes, runs.", no_args_is_help=True
)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")
console = Console()


@app.command()
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
        console.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(2) from None
    try:
        checkpoints = migrate_checkpoints(pool)
        workers = MIGRATIONS.migrate(pool)
    except CheckpointStoreError as exc:  # SchemaVersionError too: says what to do
        console.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(1) from None
    finally:
        pool.close()
    console.print(f"checkpoint_pg schema: version {checkpoints}")
    console.print(f"workers schema: version {workers}")
    console.print("[green]database is up to date[/green]")


@app.command()
def resume(
    graph: Annotated[str, typer.Option(help="Registered graph name.")],
    thread: Annotated[str, typer.Option(help="Thread id.")],
    value: Annotated[str, typer.Option(help="Resume value as JSON (a string must be quoted).")],
    key: Annotated[
        str | None, typer.Option(help="Idempotency key: the same key applies once.")
    ] = None,
    actor: Annotated[str | None, typer.Option(help="Who resumes (kept with the run).")] = None,
    note: Annotated[str | None, typer.Option(help="Why (kept with the run).")] = None,
    wait: Annotated[
        bool, typer.Option(help="Wait for the resumed run and print its result.")
    ] = True,
) -> None:
    """Resume an interrupted thread (checked against its pending interrupts when it runs).

    Exit codes: 0 applied (or queued, with --no-wait); 1 refused or failed (nothing was
    changed); 3 recorded but not yet sent to the broker (a worker's sweeper sends it).
    """
    from graphruntime.types import Command
    from workers.client import GraphClient
    from workers.errors import NotDispatchedError

    try:
        resume_value: Any = json.loads(value)
    except ValueError:
        console.print(f"[red]--value must be JSON, got {value!r}[/red]")
        raise typer.Exit(2) from None
    try:
        client = GraphClient.from_env()
    except WorkerError as exc:
        console.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(2) from None
    try:
        handle = client.submit(
            graph,
            Command(resume=resume_value),
            {"configurable": {"thread_id": thread}},
            idempotency_key=key,
            actor=actor,
            note=note,
            route="cli",
        )
        console.print(f"run {handle.run_id} ({'new' if handle.created else 'already submitted'})")
        if wait:
            console.print(handle.wait())
        else:
            console.print("queued: it is checked against the thread when it runs")
    except NotDispatchedError as exc:
        console.print(f"{type(exc).__name__}: {exc}", style="yellow", markup=False)
        raise typer.Exit(3) from None
    except Exception as exc:  # noqa: BLE001 - shown to the operator, exit non-zero
        console.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(1) from None
    finally:
        client.close()


@app.command()
def runs(thread: Annotated[str, typer.Option(help="Thread id.")]) -> None:
    """List a thread's runs, newest first."""
    from workers.client import GraphClient

    client = GraphClient.from_env()
    table = Table("run", "status", "kind", "created", "error")
    for row in client.store.runs_of_thread(thread):
        error = row["error"] or {}
        table.add_row(
            str(row["run_id"]),
            row["status"],
            row["kind"],
            str(row["created_at"]),
            f"{error.get('type', '')} {error.get('message', '')}".strip(),
        )
    console.print(table)
    client.close()


def main() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(app())


if __name__ == "__main__":
    main()
