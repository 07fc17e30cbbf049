"""Exceptions raised by the stores.

They extend graphruntime's tree::

    GraphRuntimeError
    └── StoreError                        anything a store raised
        ├── InvalidStoreRequestError      a call the store refuses (also a ValueError)
        │   └── InvalidNamespaceError     a namespace LangGraph would refuse too
        └── StoreBackendError             the backend (a database) failed; see __cause__
"""

from __future__ import annotations

from graphruntime.errors import GraphRuntimeError

__all__ = (
    "InvalidNamespaceError",
    "InvalidStoreRequestError",
    "StoreBackendError",
    "StoreError",
)


class StoreError(GraphRuntimeError):
    """A store failed or refused an operation."""


class InvalidStoreRequestError(StoreError, ValueError):
    """An argument the store cannot honour: a bad filter, TTL, key, value or page bound."""


class InvalidNamespaceError(InvalidStoreRequestError):
    """A namespace that is empty, has an empty label, a period or NUL in a label, or the
    reserved root label ``"langgraph"``."""


class StoreBackendError(StoreError):
    """The storage backend failed; the driver's exception is the ``__cause__``."""
