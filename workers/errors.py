"""Errors raised by the workers, the client and the resume path.

WorkerError (GraphRuntimeError)
├── ConfigurationError      bad settings or registry entries
├── UnknownGraphError       a run names a graph that is not in the registry
├── MalformedMessageError   a queue message that does not parse
├── ResumeConflictError     another resume of the same interrupt got there first
├── ThreadBusyError         the thread has a run in flight
├── RunTimeoutError         waiting on a run exceeded the timeout (the run goes on)
└── RemoteGraphError        a node raised on a worker; ``type_name`` names its class
"""

from __future__ import annotations

from graphruntime.errors import GraphRuntimeError


class WorkerError(GraphRuntimeError):
    """Root of the workers' errors."""


class ConfigurationError(WorkerError, ValueError):
    """The settings or the graph registry are wrong; fix the environment and restart."""


class UnknownGraphError(WorkerError, LookupError):
    """The named graph is not in ``GRAPHRUNTIME_GRAPHS``."""


class MalformedMessageError(WorkerError, ValueError):
    """A queue message could not be parsed; it was set aside, nothing changed."""


class ResumeConflictError(WorkerError):
    """A different resume for the same interrupt was accepted first."""


class ThreadBusyError(WorkerError):
    """The thread has a run in flight; wait for it or resume after it pauses."""


class RunTimeoutError(WorkerError, TimeoutError):
    """The run did not finish in time; it keeps running, wait on its handle again."""


class RemoteGraphError(WorkerError):
    """A node failed on a worker with an exception type the client cannot rebuild."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is (or was caused by) a lost or refused Postgres connection.

    Such a failure says nothing about the graph: the job that met it is retried
    (every job is idempotent) instead of failing the run. A node's own errors are
    recorded as writes before they could get here.
    """
    import psycopg  # workers depend on psycopg; graphruntime's errors stay import-free

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, psycopg.OperationalError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
