"""The root of graphruntime's error tree and its general-purpose classes.

They live below :mod:`graphruntime.errors` (which re-exports them) so the lowest modules
can raise them too; each says it belongs to ``graphruntime.errors``, where users import
it from and where the workers look it up to rebuild a remote error.
"""

from __future__ import annotations

__all__ = (
    "GraphRuntimeError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "MissingDependencyError",
    "NotSupportedError",
    "UsageError",
)

_HOME = "graphruntime.errors"


class GraphRuntimeError(Exception):
    """Root of every exception graphruntime raises."""


class InvalidArgumentError(GraphRuntimeError, ValueError):
    """An argument with a value graphruntime cannot use; the message names it and what it
    takes. Nothing was changed."""


class InvalidArgumentTypeError(GraphRuntimeError, TypeError):
    """An argument of the wrong type, or a keyword the call does not take; the message
    names it and what it takes."""


class UsageError(GraphRuntimeError, RuntimeError):
    """A call made where or when it cannot work (``get_config()`` outside a running graph,
    a stream consumed twice); the message says what to do instead."""


class NotSupportedError(GraphRuntimeError, NotImplementedError):
    """A LangGraph feature or option graphruntime does not offer; the message says what
    to use instead."""


class MissingDependencyError(GraphRuntimeError, ImportError):
    """An optional extra is not installed; the message names the ``pip install`` to run."""


for _error in (
    GraphRuntimeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UsageError,
    NotSupportedError,
    MissingDependencyError,
):
    _error.__module__ = _HOME
