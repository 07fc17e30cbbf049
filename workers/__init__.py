"""Run graphruntime graphs on Celery workers: one superstep's tasks across many processes.

Only :mod:`workers.app` and :mod:`workers.tasks` import Celery. The names below are
imported on first use, so that ``import workers.cli`` (``graphrun --help``) or
``import workers.errors`` does not load the client, the runtime and psycopg.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    name: "workers.client" if name in ("GraphClient", "RunHandle") else "workers.errors"
    for name in __all__
}
_HOME["Settings"] = "workers.settings"


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'workers' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
