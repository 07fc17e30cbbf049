"""Long-term memory for graphs: LangGraph's store API.

``graphruntime.store.base`` is the contract (:class:`BaseStore`, :class:`Item`,
the ops), ``graphruntime.store.memory`` the in-process store; the Postgres one
is ``checkpoint_pg.PostgresStore``. Same module paths as ``langgraph.store``.
"""

from __future__ import annotations

from graphruntime.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    InvalidStoreRequestError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    StoreBackendError,
    StoreError,
    TTLConfig,
)
from graphruntime.store.memory import InMemoryStore

__all__ = (
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "InMemoryStore",
    "IndexConfig",
    "InvalidNamespaceError",
    "InvalidStoreRequestError",
    "Item",
    "ListNamespacesOp",
    "MatchCondition",
    "NotProvided",
    "Op",
    "PutOp",
    "Result",
    "SearchItem",
    "SearchOp",
    "StoreBackendError",
    "StoreError",
    "TTLConfig",
)
