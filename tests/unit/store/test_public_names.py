"""The public names of graphruntime.store and graphruntime.cache, pinned."""

from __future__ import annotations

import graphruntime.cache
import graphruntime.store
import graphruntime.store.base
import graphruntime.store.memory


def test_store_public_names() -> None:
    assert set(graphruntime.store.__all__) == {
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
    }
    assert graphruntime.store.memory.__all__ == ("InMemoryStore",)
    # Every name LangGraph's langgraph.store.base exports that a port would import.
    langgraph_names = {
        "BaseStore", "Item", "Op", "PutOp", "GetOp", "SearchOp", "ListNamespacesOp",
        "MatchCondition", "NamespacePath", "NamespaceMatchType", "Embeddings",
        "ensure_embeddings", "tokenize_path", "get_text_at_path", "SearchItem", "TTLConfig",
        "IndexConfig", "NotProvided", "NOT_PROVIDED", "InvalidNamespaceError", "Result",
    }  # fmt: skip
    assert langgraph_names <= set(graphruntime.store.base.__all__)
    for name in graphruntime.store.base.__all__:
        assert hasattr(graphruntime.store.base, name), name


def test_cache_public_names() -> None:
    assert set(graphruntime.cache.__all__) == {
        "BaseCache",
        "CacheError",
        "CachePolicy",
        "FullKey",
        "InMemoryCache",
        "InvalidCacheRequestError",
        "Namespace",
        "default_cache_key",
    }
