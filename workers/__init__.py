"""Run graphruntime graphs on Celery workers: one superstep's tasks across many processes.

Only :mod:`workers.app` and :mod:`workers.tasks` import Celery.
"""

from __future__ import annotations

from workers.client import GraphClient, RunHandle
from workers.errors import (
    ConfigurationError,
    MalformedMessageError,
    RemoteGraphError,
    ResumeConflictError,
    RunTimeoutError,
    ThreadBusyError,
    UnknownGraphError,
    WorkerError,
)
from workers.settings import Settings

__all__ = (
    "ConfigurationError",
    "GraphClient",
    "MalformedMessageError",
    "RemoteGraphError",
    "ResumeConflictError",
    "RunHandle",
    "RunTimeoutError",
    "Settings",
    "ThreadBusyError",
    "UnknownGraphError",
    "WorkerError",
)
