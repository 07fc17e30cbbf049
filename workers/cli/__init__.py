"""``graphrun``: run workers, migrate the database, resume and cancel threads, work the
inbox (or serve it to approvers), inspect runs. Each command group lives in its own module."""

from __future__ import annotations

import os
import sys

import typer

from workers.cli._dead import dead_app
from workers.cli._dev import dev
from workers.cli._inbox import cancel, inbox_app
from workers.cli._runs import resume, runs, status
from workers.cli._serve import serve
from workers.cli._ui import ui
from workers.cli._worker import db_app, worker

__all__ = ("app", "main")

app = typer.Typer(
    help="graphruntime on Celery: workers, migrations, resumes, the inbox, runs.",
    no_args_is_help=True,
)
app.command()(worker)
app.add_typer(db_app, name="db")
app.command()(resume)
app.command()(runs)
app.command()(status)
app.add_typer(dead_app, name="dead")
app.add_typer(inbox_app, name="inbox")
app.command()(dev)
app.command()(cancel)
app.command()(ui)
app.command()(serve)


def main() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(app())
