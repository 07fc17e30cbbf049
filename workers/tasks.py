"""Thin Celery tasks: decode the message, call the plain function, nothing else."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

from workers.app import CeleryDispatcher, app
from workers.context import WorkerContext
from workers.coordinator import coordinate
from workers.errors import MalformedMessageError
from workers.executor import execute_task
from workers.messages import CoordinateMessage, TaskMessage, parse
from workers.runtime import build_context

log = logging.getLogger(__name__)


@cache
def _context() -> WorkerContext:
    settings = app.conf.graphruntime_settings
    return build_context(settings, CeleryDispatcher(app, settings))


@app.task(name="graphruntime.coordinate")  # type: ignore[untyped-decorator]
def coordinate_task(**kwargs: Any) -> None:
    try:
        msg = parse(CoordinateMessage, kwargs)
    except MalformedMessageError:
        log.exception("dropping malformed coordinate message %r", kwargs)
        return
    coordinate(_context(), msg.run_id)


@app.task(name="graphruntime.execute")  # type: ignore[untyped-decorator]
def execute_task_job(**kwargs: Any) -> None:
    try:
        msg = parse(TaskMessage, kwargs)
    except MalformedMessageError:
        log.exception("dropping malformed task message %r", kwargs)
        return
    execute_task(_context(), msg)
