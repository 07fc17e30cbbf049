"""Exceptions raised by graphruntime.

Every exception the runtime raises derives from :class:`GraphRuntimeError`, so
callers can catch "anything graphruntime raised" in one clause::

    GraphRuntimeError
    ├── GraphBubbleUp                 control flow, never shown to users as a failure
    │   ├── GraphInterrupt            a node called interrupt() / a static breakpoint fired
    │   │   └── NodeInterrupt         deprecated LangGraph spelling, kept for ports
    │   └── ParentCommand             Command(graph=Command.PARENT) travelling upwards
    ├── GraphRecursionError           also a RecursionError, as in LangGraph
    ├── InvalidUpdateError            a write a channel cannot take
    ├── EmptyInputError               a run with nothing to do
    ├── InvalidResumeError            a resume that matches no pending interrupt (also a ValueError)
    │   └── AmbiguousResumeError      a plain resume, several interrupts pending (a RuntimeError)
    ├── GraphValidationError          a graph that cannot compile (also a ValueError)
    ├── EmptyChannelError             reading a channel that has no value
    └── CheckpointError               raised by checkpoint savers
        ├── CheckpointConflict        a writer holding a stale head
        └── SerializationError        a value the serializer refuses to write or read

Where LangGraph raises a built-in type (``ValueError``, ``RuntimeError``) we
raise a subclass of both, so ported ``except`` clauses keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

from graphruntime._internal._interrupt import Interrupt

if TYPE_CHECKING:
    from graphruntime.types import Command

__all__ = (
    "AmbiguousResumeError",
    "CheckpointConflict",
    "CheckpointError",
    "EmptyChannelError",
    "EmptyInputError",
    "ErrorCode",
    "GraphBubbleUp",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphRuntimeError",
    "GraphValidationError",
    "InvalidResumeError",
    "InvalidUpdateError",
    "NodeInterrupt",
    "ParentCommand",
    "SerializationError",
    "create_error_message",
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


class GraphRuntimeError(Exception):
    """Root of every exception graphruntime raises."""


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
        super().__init__([Interrupt(value=value, id=id or "placeholder-id")])


class ParentCommand(GraphBubbleUp):
    """A ``Command(graph=Command.PARENT)`` returned inside a subgraph."""

    def __init__(self, command: Command[Any]) -> None:
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


class AmbiguousResumeError(InvalidResumeError, RuntimeError):
    """A plain ``Command(resume=value)`` while several interrupts are pending.

    Name each one: ``Command(resume={interrupt_id: value, ...})``. LangGraph raises a
    ``RuntimeError`` here; this is one too.
    """


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
