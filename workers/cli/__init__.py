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
# short_help: one line each in `graphrun --help` (the docstring is the command's own help)
app.command(short_help="Start a worker for coordinator runs and task jobs.")(worker)
app.add_typer(db_app, name="db")
app.command(short_help="Resume an interrupted thread.")(resume)
app.command(short_help="Recent runs, newest first, with their errors.")(runs)
app.command(short_help="The cluster at a glance: workers, queues, runs, inbox.")(status)
app.add_typer(dead_app, name="dead")
app.add_typer(inbox_app, name="inbox")
app.command(short_help="Run a development cluster here until Ctrl-C.")(dev)
app.command(short_help="Cancel a thread: its runs, tasks and waits end.")(cancel)
app.command(short_help="Serve the approvers' web inbox.")(ui)
app.command(short_help="Serve the LangGraph Server API in front of the workers.")(serve)


def main() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(app())
