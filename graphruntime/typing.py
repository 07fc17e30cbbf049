"""Type variables of the public generics (as ``langgraph.typing``).

``StateGraph[State]`` and ``StateGraph[State, Context]`` both work: the context, input
and output parameters have defaults.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypeVar

__all__ = (
    "ContextT",
    "ContextT_contra",
    "InputT",
    "NodeInputT",
    "NodeInputT_contra",
    "OutputT",
    "StateT",
    "StateT_co",
    "StateT_contra",
)

StateT = TypeVar("StateT", default=Any)
"""The graph's state schema."""
StateT_co = TypeVar("StateT_co", covariant=True)
StateT_contra = TypeVar("StateT_contra", contravariant=True)
ContextT = TypeVar("ContextT", default=None)
"""The run-scoped context schema (``Runtime.context``); defaults to None."""
ContextT_contra = TypeVar("ContextT_contra", contravariant=True, default=None)
InputT = TypeVar("InputT", default=StateT)
"""The graph's input schema; defaults to the state schema."""
OutputT = TypeVar("OutputT", default=StateT)
"""The graph's output schema; defaults to the state schema."""
NodeInputT = TypeVar("NodeInputT")
"""What one node reads."""
NodeInputT_contra = TypeVar("NodeInputT_contra", contravariant=True)
