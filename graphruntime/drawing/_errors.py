"""Errors raised when a drawing cannot be made here."""

from __future__ import annotations

from graphruntime.errors import GraphRuntimeError


class DrawingUnavailableError(GraphRuntimeError, NotImplementedError):
    """This output format needs a renderer graphruntime does not use (Graphviz, a web API)."""


class MissingDependencyError(GraphRuntimeError, ImportError):
    """An optional package this drawing needs is not installed; the message names the extra."""
