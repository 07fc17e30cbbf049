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


# Server states that pass: shutting down or starting up (57P0x), a serialization failure
# or deadlock (40001, 40P01: the transaction is simply retried), too many connections.
_TRANSIENT_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "40001", "40P01", "53300"})


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is (or was raised from) a lost or refused Postgres connection.

    Such a failure says nothing about the graph: the job that met it is retried
    (every job is idempotent) instead of failing the run. Errors that would happen
    again (a statement timeout, a disk full, a value too big for an index) are not
    transient: they fail the run with a message. A node's own errors are recorded
    as writes before they could get here.
    """
    import psycopg  # workers depend on psycopg; graphruntime's errors stay import-free
    from psycopg_pool import PoolTimeout

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PoolTimeout):
            return True
        if isinstance(current, psycopg.OperationalError):
            state = current.sqlstate
            # no SQLSTATE: the client lost the connection; class 08: connection exception
            return state is None or state.startswith("08") or state in _TRANSIENT_SQLSTATES
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
