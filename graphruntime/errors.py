"""Exceptions raised by graphruntime.

Every exception the runtime raises derives from :class:`GraphRuntimeError`, so
callers can catch "anything graphruntime raised" in one clause::

    GraphRuntimeError
    ├── GraphBubbleUp                 control flow, never shown to users as a failure
    │   ├── GraphInterrupt            a node called interrupt() / a static breakpoint fired
    │   │   └── NodeInterrupt         deprecated LangGraph spelling, kept for ports
    │   ├── GraphDrained              RunControl.request_drain(): stopped between steps
    │   └── ParentCommand             Command(graph=Command.PARENT) travelling upwards
    ├── GraphRecursionError           also a RecursionError, as in LangGraph
    ├── InvalidUpdateError            a write a channel cannot take
    ├── EmptyInputError               a run with nothing to do
    ├── InvalidResumeError            a resume that matches no pending interrupt (also a ValueError)
    │   └── UnknownInterruptError     ... naming its reason and the pending ids (LangGraph's)
    │       └── AmbiguousResumeError  a plain resume, several interrupts pending (a RuntimeError)
    ├── GraphValidationError          a graph that cannot compile (also a ValueError)
    ├── EmptyChannelError             reading a channel that has no value
    ├── InvalidArgumentError          an argument with a value that cannot be used (a ValueError)
    ├── InvalidArgumentTypeError      an argument of a wrong type, an unknown keyword (a TypeError)
    ├── UsageError                    a call made where or when it cannot work (a RuntimeError)
    ├── NotSupportedError             a LangGraph option graphruntime does not offer
    │                                 (a NotImplementedError)
    ├── MissingDependencyError        an optional extra is not installed (an ImportError)
    ├── NodeTimeoutError              a node attempt ran past its TimeoutPolicy
    ├── NodeCancelledError            a node raised asyncio.CancelledError itself
    └── CheckpointError               raised by checkpoint savers
        ├── CheckpointConflict        a writer holding a stale head
        └── SerializationError        a value the serializer refuses to write or read

Where LangGraph raises a built-in type (``ValueError``, ``RuntimeError``) we
raise a subclass of both, so ported ``except`` clauses keep working; where it raises
one of its own classes we raise the class of the same name. The stores' errors
(:mod:`graphruntime.store`), checkpoint_pg's and the workers' extend this tree.
:class:`NodeError` is not an exception: it is what a node's error handler is given.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Literal, TypeVar

from graphruntime import warnings as deprecation
from graphruntime._internal._errors import (
    GraphRuntimeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    NotSupportedError,
    UsageError,
)
from graphruntime._internal._interrupt import Interrupt

_C = TypeVar("_C")

__all__ = (
    "AmbiguousResumeError",
    "CheckpointConflict",
    "CheckpointError",
    "EmptyChannelError",
    "EmptyInputError",
    "ErrorCode",
    "GraphBubbleUp",
    "GraphDrained",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphRuntimeError",
    "GraphValidationError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidResumeError",
    "InvalidUpdateError",
    "MissingDependencyError",
    "NodeCancelledError",
    "NodeError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "NotSupportedError",
    "ParentCommand",
    "SerializationError",
    "UnknownInterruptError",
    "UsageError",
    "create_error_message",
    "is_invalid_resume",
)


class ErrorCode(Enum):
    GRAPH_RECURSION_LIMIT = "GRAPH_RECURSION_LIMIT"
    INVALID_CONCURRENT_GRAPH_UPDATE = "INVALID_CONCURRENT_GRAPH_UPDATE"
    INVALID_GRAPH_NODE_RETURN_VALUE = "INVALID_GRAPH_NODE_RETURN_VALUE"
    MULTIPLE_SUBGRAPHS = "MULTIPLE_SUBGRAPHS"
    INVALID_CHAT_HISTORY = "INVALID_CHAT_HISTORY"


def create_error_message(*, message: str, error_code: ErrorCode) -> str:
    return (
        f"{message}\n"
        "For troubleshooting, visit: https://docs.langchain.com/oss/python/langgraph/"
        f"errors/{error_code.value}"
    )


class GraphBubbleUp(GraphRuntimeError):
    """Control flow that unwinds a task; not a failure."""


class GraphInterrupt(GraphBubbleUp):
    """A node paused for input; carries the interrupts to show the caller."""

    def __init__(self, interrupts: Sequence[Interrupt] = ()) -> None:
        super().__init__(interrupts)
        self.interrupts: Sequence[Interrupt] = interrupts


class NodeInterrupt(GraphInterrupt):
    """Deprecated: raise ``interrupt(value)`` instead."""

    def __init__(self, value: Any, id: str | None = None) -> None:
        warnings.warn(
            "NodeInterrupt is deprecated. Please use `langgraph.types.interrupt` instead.",
            deprecation.LangGraphDeprecatedSinceV10,
            stacklevel=2,
        )
        super().__init__([Interrupt(value=value, id=id or "placeholder-id")])


class GraphDrained(GraphBubbleUp):
    """The run stopped between two steps because ``RunControl.request_drain()`` was called.

    The last finished step is checkpointed: invoke the thread again with ``None`` to
    carry on from there.
    """

    def __init__(self, reason: str = "shutdown") -> None:
        self.reason = reason
        super().__init__(f"Graph drained: {reason}")


class ParentCommand(GraphBubbleUp, Generic[_C]):
    """A ``Command(graph=Command.PARENT)`` returned inside a subgraph.

    Generic in the command's type (``graphruntime.types.Command``, a layer above)."""

    def __init__(self, command: _C) -> None:
        super().__init__(command)
        self.command = command


class GraphRecursionError(GraphRuntimeError, RecursionError):
    """The run exceeded ``recursion_limit`` supersteps.

    Raise the limit in the config (``{"recursion_limit": N}``) if the graph
    really needs more steps, or add a stop condition to the loop.
    """


class InvalidUpdateError(GraphRuntimeError):
    """A node or caller wrote something a channel cannot accept."""


class EmptyInputError(GraphRuntimeError):
    """A run was started with no input and nothing to resume."""


class InvalidResumeError(GraphRuntimeError, ValueError):
    """A resume command matches no pending interrupt; nothing was changed."""


class UnknownInterruptError(InvalidResumeError):
    """A resume that does not match the pending interrupts (LangGraph's strict resume error).

    ``reason``: ``"not_pending"`` (the map names interrupts that are not pending, listed
    in ``interrupt_ids``), ``"empty_map"``, or ``"ambiguous"`` (one value while several
    are pending). ``pending_ids``: the interrupts still waiting, sorted; nothing was
    written, so they can still be answered. graphruntime always resumes strictly.
    """

    reason: Literal["not_pending", "empty_map", "ambiguous"]
    interrupt_ids: tuple[str, ...]
    pending_ids: tuple[str, ...]

    def __init__(
        self,
        message: str,
        *,
        reason: Literal["not_pending", "empty_map", "ambiguous"] = "not_pending",
        interrupt_ids: Sequence[str] = (),
        pending_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.interrupt_ids = tuple(interrupt_ids)
        self.pending_ids = tuple(pending_ids)

    def __reduce__(self) -> Any:
        # keyword-only fields: copy.copy/deepcopy rebuild the error by name
        return (
            _rebuild_unknown_interrupt,
            (type(self), str(self), self.reason, self.interrupt_ids, self.pending_ids),
        )


def _rebuild_unknown_interrupt(
    cls: type[UnknownInterruptError],
    message: str,
    reason: Literal["not_pending", "empty_map", "ambiguous"],
    interrupt_ids: tuple[str, ...],
    pending_ids: tuple[str, ...],
) -> UnknownInterruptError:
    return cls(message, reason=reason, interrupt_ids=interrupt_ids, pending_ids=pending_ids)


class AmbiguousResumeError(UnknownInterruptError, RuntimeError):
    """A plain ``Command(resume=value)`` while several interrupts are pending.

    Name each one: ``Command(resume={interrupt_id: value, ...})``. LangGraph raises a
    ``RuntimeError`` here (an ``UnknownInterruptError`` in strict mode); this is both.
    """

    def __init__(self, message: str, *, pending_ids: Sequence[str] = (), **_rebuilt: Any) -> None:
        super().__init__(message, reason="ambiguous", pending_ids=pending_ids)


class GraphValidationError(GraphRuntimeError, ValueError):
    """The graph definition is invalid and cannot be compiled."""


class EmptyChannelError(GraphRuntimeError):
    """Read of a channel that has no value yet."""


class CheckpointError(GraphRuntimeError):
    """A checkpoint saver failed to read or write."""


class CheckpointConflict(CheckpointError):
    """Another writer advanced the thread first; reload and retry."""


class SerializationError(CheckpointError):
    """A value the serializer refuses to write, or stored data it refuses to read.

    The message names where in the value the problem is and what to do about it.
    """


class NodeTimeoutError(GraphRuntimeError):
    """A node attempt exceeded its ``TimeoutPolicy`` (``run_timeout`` or ``idle_timeout``).

    Not a built-in ``TimeoutError`` (an ``OSError``), so the default ``RetryPolicy``
    retries it. ``kind`` and ``timeout`` say which limit fired; both configured
    limits are kept.
    """

    node: str
    timeout: float
    run_timeout: float | None
    idle_timeout: float | None
    elapsed: float
    kind: Literal["idle", "run"]

    def __init__(
        self,
        node: str,
        elapsed: float,
        *,
        kind: Literal["idle", "run"],
        idle_timeout: float | None = None,
        run_timeout: float | None = None,
    ) -> None:
        if kind == "idle":
            if idle_timeout is None:
                raise InvalidArgumentError("idle_timeout is required when kind='idle'")
            self.timeout = idle_timeout
            message = (
                f"Node '{node}' exceeded its idle timeout of {idle_timeout:.3f}s without "
                f"making progress (elapsed: {elapsed:.3f}s)."
            )
        elif kind == "run":
            if run_timeout is None:
                raise InvalidArgumentError("run_timeout is required when kind='run'")
            self.timeout = run_timeout
            message = (
                f"Node '{node}' exceeded its run timeout of {run_timeout:.3f}s "
                f"(elapsed: {elapsed:.3f}s)."
            )
        else:
            raise InvalidArgumentError(f"kind must be 'idle' or 'run', not {kind!r}")
        super().__init__(message)
        self.node = node
        self.elapsed = elapsed
        self.kind = kind
        self.idle_timeout = idle_timeout
        self.run_timeout = run_timeout

    def __reduce__(self) -> tuple[Any, ...]:
        # copy.copy would call the constructor with ``args`` (the message)
        return (
            _node_timeout_error,
            (self.node, self.elapsed, self.kind, self.idle_timeout, self.run_timeout),
        )


def _node_timeout_error(
    node: str,
    elapsed: float,
    kind: Literal["idle", "run"],
    idle_timeout: float | None,
    run_timeout: float | None,
) -> NodeTimeoutError:
    return NodeTimeoutError(
        node, elapsed, kind=kind, idle_timeout=idle_timeout, run_timeout=run_timeout
    )


class NodeCancelledError(GraphRuntimeError):
    """A node's own code raised ``asyncio.CancelledError``.

    Cancellation by the runtime (a sibling failed, the caller cancelled the run) stays
    a ``CancelledError``; a node that raises it itself has failed, like any node that
    raises, and its run fails with this error.
    """

    node: str

    def __init__(self, node: str, message: str | None = None) -> None:
        super().__init__(message or f"Node {node!r} raised asyncio.CancelledError")
        self.node = node


@dataclass(frozen=True, slots=True)
class NodeError:
    """What a node's error handler is told: which node failed, and with what.

    A handler gets it by naming a parameter ``error: NodeError``.
    """

    node: str
    """The node whose execution failed."""
    error: BaseException
    """What it raised (after its retries ran out)."""


_INVALID_RESUME = "_graphruntime_invalid_resume"


def mark_invalid_resume(error: BaseException) -> None:
    """Flag ``error`` as raised by a resume value its interrupt's schema refused."""
    setattr(error, _INVALID_RESUME, True)


def is_invalid_resume(error: BaseException) -> bool:
    """Whether ``error`` was raised because a resume value did not match ``response_schema``.

    ``interrupt()`` raises the validation error in that case; a caller (a tool node)
    uses this to tell it apart from its own invalid arguments.
    """
    return getattr(error, _INVALID_RESUME, False) is True
