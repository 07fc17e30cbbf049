"""Errors raised by the workers, the client and the resume path.

WorkerError (graphruntime.errors.GraphRuntimeError)
├── ConfigurationError          bad settings or registry entries (a ValueError)
├── UnknownGraphError           a run names a graph that is not in the registry
├── GraphMismatchError          a thread belongs to another graph than the run names
├── InvalidRequestError         a bad argument: a name, a note, a limit (a ValueError)
│   ├── InvalidFilterError      an inbox filter or cursor that cannot be used
│   └── ui.FormError            an inbox form that cannot be applied
├── MalformedMessageError       a queue message that does not parse
├── ResumeConflictError         another resume of the same pause got there first
│                               (also an InvalidResumeError)
├── ThreadBusyError             the thread has a run in flight
│   └── ThreadLeasedError       a live worker holds its lease
├── CancelPendingError          a cancel is queued behind a run in flight (a TimeoutError)
├── RunNotFoundError            no run has that id
├── ThreadNotFoundError         no run was ever made on that thread id
├── WaitNotPendingError         no such pending interrupt (answered, or cancelled)
├── DeadLetterNotFoundError     no dead letter matches the sha256 prefix
├── RunTimeoutError             waiting on a run exceeded the timeout (the run goes on)
├── NotDispatchedError          the run is recorded but the broker could not be reached
├── RemoteGraphError            a node raised on a worker; ``type_name`` names its class
├── NodeFailedError             a job's node failed (the job shows as failed)
├── RemoteTaskError             a node's error recorded by a task job
├── NondeterministicCallError   a ``@task`` call its caller, run again, did not make
├── RunStoreError               the run store failed an operation
│   ├── StoreUnavailableError   Postgres could not be reached: retry later
│   └── StoreRecoveredError     Postgres recovered from a crash mid-job: the job is redone
├── BrokerUnavailableError      the broker (Redis) could not be reached: retry later
├── StartupError                a process a command starts did not come up (a RuntimeError)
├── WebhookRefusedError         a run's webhook answered an HTTP error (delivery is retried)
└── api.ApiError                an HTTP error with LangGraph's status and body

``RunStoreError`` is the run store's (runs, inbox, leases); the LangGraph-facing key-value
store (``graphruntime.store``, ``checkpoint_pg.PostgresStore``) raises
``graphruntime.store.StoreError``, and the checkpoint saver
``checkpoint_pg.CheckpointStoreError``.
"""

from __future__ import annotations

import builtins
import importlib
import os
import socket
import traceback
from typing import Any

from graphruntime.errors import GraphRuntimeError, InvalidResumeError


class WorkerError(GraphRuntimeError):
    """Root of the workers' errors."""


class ConfigurationError(WorkerError, ValueError):
    """The settings or the graph registry are wrong; fix the environment and restart."""


class UnknownGraphError(WorkerError, LookupError):
    """The named graph is not in ``GRAPHRUNTIME_GRAPHS``."""


class GraphMismatchError(WorkerError, ValueError):
    """The thread was started by another graph; a thread runs under one graph only."""


class InvalidRequestError(WorkerError, ValueError):
    """A request with a bad argument (a name, a note, a value, a limit); the message says
    which and why. Nothing was read or changed."""


class InvalidFilterError(InvalidRequestError):
    """An inbox filter, page cursor or selection that cannot be used."""


class MalformedMessageError(WorkerError, ValueError):
    """A queue message could not be parsed; it was set aside, nothing changed."""


class ResumeConflictError(WorkerError, InvalidResumeError):
    """A different resume for the same pause was accepted first; this one changed nothing."""


class ThreadBusyError(WorkerError):
    """The thread has a run in flight; wait for it or resume after it pauses."""


class ThreadLeasedError(ThreadBusyError):
    """A live worker holds the thread's lease (it is advancing one of its runs)."""


class CancelPendingError(WorkerError, TimeoutError):
    """The cancel could not take the thread's lease in time; it is queued and applies
    once the worker advancing the thread frees it. ``run_id``: the cancel's run."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunNotFoundError(WorkerError, LookupError):
    """No run has this id."""


class DeadLetterNotFoundError(WorkerError, LookupError):
    """No dead letter's sha256 starts with the prefix given; list them to see theirs."""


class ThreadNotFoundError(WorkerError, LookupError):
    """No run was ever made on this thread id: check the id."""


class WaitNotPendingError(WorkerError, LookupError):
    """The thread has no such pending interrupt: it was answered, or cancelled."""


class RunTimeoutError(WorkerError, TimeoutError):
    """The run did not finish in time; it keeps running, wait on its handle again."""


class NotDispatchedError(WorkerError):
    """The run was recorded, but its message could not be sent to the broker.

    Nothing is lost: the sweeper of any running worker finds the queued run and
    sends it. ``run_id`` names it.
    """

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class RemoteGraphError(WorkerError):
    """A node failed on a worker with an exception type the client cannot rebuild."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name

    def __reduce__(self) -> tuple[Any, ...]:
        # copy.copy calls the constructor with these (not with ``args``)
        return (type(self), (self.type_name, str(self)), self.__dict__)


class NodeFailedError(WorkerError):
    """A job's node (or run) failed; raised by the Celery job after recording it, so
    the job shows as failed. The run's error holds the node's own exception."""


class RemoteTaskError(WorkerError):
    """A node's error recorded by a task job; ``info`` is what the job recorded."""

    def __init__(self, info: dict[str, Any]) -> None:
        super().__init__(info.get("message", ""))
        self.info = info


class NondeterministicCallError(WorkerError):
    """A ``@task`` call sent as a job that its caller, run again, did not make again."""


class RunStoreError(WorkerError):
    """The run store failed an operation; the driver's exception is the ``__cause__``."""


class StoreRecoveredError(RunStoreError):
    """Postgres recovered from a crash since the job began: work it committed without
    waiting for the WAL flush may be lost, so its durable commit was refused and the job
    is redone (transient: retried, never retried in place)."""


class StoreUnavailableError(RunStoreError):
    """The run store's database could not be reached; the operation may be retried."""


class BrokerUnavailableError(WorkerError):
    """The broker could not be reached; the operation may be retried."""


class StartupError(WorkerError, RuntimeError):
    """A process a command starts (a celery worker, the embedded Redis, ``graphrun serve``)
    did not come up in time; the message says which and what to check."""


class WebhookRefusedError(WorkerError):
    """A run's webhook answered with an HTTP error status; the delivery is tried again
    later (up to the server's attempts), and the error is recorded on the run."""


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` means a service was unreachable (retry the job) rather than a fault.

    Such a failure says nothing about the graph: the job that met it is retried
    (every job is idempotent) instead of failing the run. The stores classify driver
    errors by SQLSTATE when they wrap them; this only reads their classes.
    """
    from checkpoint_pg import CheckpointStoreUnavailable

    return isinstance(
        exc,
        StoreUnavailableError
        | StoreRecoveredError
        | BrokerUnavailableError
        | CheckpointStoreUnavailable,
    )


def error_info(
    exc: BaseException, task: str | None = None, checkpoint_id: str | None = None
) -> dict[str, Any]:
    """A JSON-safe description of a failure; the client rebuilds the exception from it.

    ``args`` are kept when they are plain JSON values, so ``KeyError('k')`` comes back
    as ``KeyError('k')`` and not as a KeyError of its quoted message. ``traceback`` is
    the worker's formatted traceback (text, the last ``MAX_TRACEBACK`` characters), and
    ``worker`` the host and process that raised it.
    """
    args = [a for a in exc.args if isinstance(a, (str, int, float, bool)) or a is None]
    text = "".join(traceback.format_exception(exc))
    if len(text) > MAX_TRACEBACK:
        text = "...\n" + text[-MAX_TRACEBACK:]
    return {
        "type": type(exc).__name__,
        "module": type(exc).__module__,
        "builtin": _builtin_base(type(exc)),
        "message": str(exc),
        "args": args if len(args) == len(exc.args) else None,
        "attrs": _plain_attrs(exc),
        "repr": repr(exc),
        "task": task,
        "checkpoint_id": checkpoint_id,
        "traceback": text,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
    }


MAX_TRACEBACK = 16_384


def _builtin_base(cls: type[BaseException]) -> str | None:
    """The most specific built-in exception class ``cls`` derives from (``ValueError`` for
    pydantic's ValidationError), so ``except ValueError`` still catches it rebuilt."""
    for base in cls.__mro__[1:]:
        if base.__module__ == "builtins" and base not in (BaseException, Exception, object):
            return base.__name__
    return None


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _plain_attrs(exc: BaseException) -> dict[str, Any]:
    """The exception's own fields that are plain values or tuples of them (such as an
    UnknownInterruptError's ``reason`` and ``pending_ids``), for the client to restore."""
    out: dict[str, Any] = {}
    for name, value in vars(exc).items():
        if name.startswith("_"):
            continue
        if _plain(value):
            out[name] = value
        elif isinstance(value, tuple) and all(_plain(v) for v in value):
            out[name] = {"tuple": list(value)}
    return out


class RemoteTraceback(Exception):
    """The traceback of an error raised on a worker, as text (the ``__cause__`` of the
    error the client re-raises, so it prints under it, as concurrent.futures does)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n\n" + self.text.rstrip()


def rebuild_error(info: dict[str, Any], run_id: str | None = None) -> BaseException:
    """Re-create a node's exception from its recorded type and message.

    Only built-in and graphruntime/workers exception classes are re-created; any
    other type becomes a :class:`RemoteGraphError` subclass with the same name. The
    worker's traceback is its ``__cause__`` (:class:`RemoteTraceback`), and a note says
    where it was raised.
    """
    error = _rebuilt(info)
    text = info.get("traceback")
    if isinstance(text, str) and text:
        error.__cause__ = RemoteTraceback(text)
    where = [f"run {run_id}"] if run_id else []
    if info.get("task"):
        where.append(f"node {info['task']}")
    if info.get("worker"):
        where.append(f"worker {info['worker']}")
    if where:
        error.add_note("Raised on the workers: " + ", ".join(where))
    return error


def _rebuilt(info: dict[str, Any]) -> BaseException:
    name = str(info.get("type", "Exception"))
    module = str(info.get("module", "builtins"))
    message = str(info.get("message", ""))
    cls: Any = None
    if module == "builtins":
        cls = getattr(builtins, name, None)
    elif module.startswith(("graphruntime.", "workers.")):
        try:
            cls = getattr(importlib.import_module(module), name, None)
        except ImportError:
            cls = None
    args = info.get("args")
    if isinstance(cls, type) and issubclass(cls, BaseException):
        plain = args if isinstance(args, list) else [message]
        try:
            rebuilt: BaseException = cls(*plain)
        except TypeError:
            # a constructor that takes other arguments (NodeTimeoutError's node, elapsed,
            # ...): the recorded args and fields make the same exception without it
            rebuilt = cls.__new__(cls)
            BaseException.__init__(rebuilt, *plain)
        _restore_attrs(rebuilt, info.get("attrs"))
        return rebuilt
    bases: tuple[type, ...] = (RemoteGraphError,)
    builtin = getattr(builtins, str(info.get("builtin")), None)
    if isinstance(builtin, type) and issubclass(builtin, Exception) and builtin is not Exception:
        bases = (RemoteGraphError, builtin)
    try:
        remote: type[RemoteGraphError] = type(name, bases, {"__module__": "workers.remote"})
    except TypeError:  # a built-in base whose layout cannot be mixed in (none known)
        remote = type(name, (RemoteGraphError,), {"__module__": "workers.remote"})
    return remote(name, message)


def _restore_attrs(error: BaseException, attrs: Any) -> None:
    """Set the fields ``error_info`` recorded (tuples were sent as ``{"tuple": [...]}``)."""
    if not isinstance(attrs, dict):
        return
    for name, value in attrs.items():
        if not isinstance(name, str) or name.startswith("_"):
            continue
        if isinstance(value, dict) and isinstance(value.get("tuple"), list):
            value = tuple(value["tuple"])
        try:
            setattr(error, name, value)
        except (AttributeError, TypeError):
            continue
